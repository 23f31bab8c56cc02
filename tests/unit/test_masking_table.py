"""Secret masking, right both ways: two tables, what must go and what must stay.

The scenario: a notebook with an OpenAI key, a database password, an Azure
key and an AWS secret in the environment, two secrets typed into cells, and a
GitHub token pasted into a request -- and the pandas KeyError whose one
useful word (the column) must reach the model.
"""

from __future__ import annotations

import traceback

import pandas as pd
import pytest

from jupyter_ai_ci.context.privacy import MaskingClient, mask_secrets, masked_cut, secret_values
from jupyter_ai_ci.context.secretnames import MASK, holds_secret, is_secret_name
from jupyter_ai_ci.events import Message, ModelReply

OPENAI_KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
DB_PASSWORD = "Tr0ub4dor&3-db"
AZURE_KEY = "0f9e8d7c6b5a49382716a5b4c3d2e1f0"  # 32 hex characters
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE9K"  # 40 characters, base64-ish
NB_AWS_SECRET = "q8Yt/2mNv+Lr5sXw9ZkE3hJc7bPa1uGd6fRo4iTe"
NB_API_TOKEN = "tok_7Hq2Lm9Xv4Rz8Kp1"
GITHUB_TOKEN = "ghp_aB3cD4eF5gH6iJ7kL8mN9oP0qR1sT2uV3wX4"

ENVIRON = {
    "OPENAI_API_KEY": OPENAI_KEY,
    "DB_PASSWORD": DB_PASSWORD,
    "AZURE_OPENAI_API_KEY": AZURE_KEY,
    "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
    "AZURE_OPENAI_ENDPOINT": "https://example.openai.azure.com/",
    "HOME": "/home/user",
    "PWD": "/home/user/project",
    "TOKENIZERS_PARALLELISM": "false",
}
NAMESPACE = {
    "aws_secret": NB_AWS_SECRET,
    "api_token": NB_API_TOKEN,
    "sort_key": "customer_id",
    "key": "Price",
    "token_count": "many_many_tokens",
    "pwd": "/home/user/project",
    "df": pd.DataFrame({"price": [1]}),
}
KNOWN = secret_values(NAMESPACE, ENVIRON)


def _pandas_key_error() -> str:
    try:
        pd.DataFrame({"price": [1]})["Price"]
    except KeyError as error:
        return "".join(traceback.format_exception(type(error), error, error.__traceback__))
    raise AssertionError("no KeyError")


MUST_MASK = [
    # (text, the secret that must be gone)
    pytest.param(f"OPENAI_API_KEY={OPENAI_KEY}", OPENAI_KEY, id="openai-key-env-dump"),
    pytest.param(f"print(os.environ)  # {{'DB_PASSWORD': '{DB_PASSWORD}'}}", DB_PASSWORD, id="db-password-env"),
    pytest.param(f"AzureOpenAI(api_key={AZURE_KEY!r}, endpoint=...)", AZURE_KEY, id="azure-key-env"),
    pytest.param(f"Out[3]: {AWS_SECRET}", AWS_SECRET, id="aws-secret-env"),
    pytest.param(f'aws_secret = "{NB_AWS_SECRET}"', NB_AWS_SECRET, id="nb-aws-secret-literal"),
    pytest.param(f"api_token = '{NB_API_TOKEN}'", NB_API_TOKEN, id="nb-api-token-literal"),
    pytest.param(f"print(aws_secret)\n{NB_AWS_SECRET}", NB_AWS_SECRET, id="nb-aws-secret-printed"),
    pytest.param(f"use {GITHUB_TOKEN} to clone the repo", GITHUB_TOKEN, id="ghp-in-request"),
    # Value shapes, whatever the name.
    pytest.param("x = 'AKIAIOSFODNN7EXAMPLE'", "AKIAIOSFODNN7EXAMPLE", id="aws-key-id"),
    pytest.param("gho_16C7e42F292c6912E7710c838347Ae178B4a", "gho_16C7e42F292c6912E7710c838347Ae178B4a", id="gho"),
    pytest.param("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github_pat_11ABCDEFG", id="github-pat"),
    pytest.param("slack xoxb-1234567890-abcdefghij", "xoxb-1234567890", id="slack"),
    pytest.param("AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890", id="google"),
    pytest.param("hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "hf_abcdefghijklmnop", id="huggingface"),
    pytest.param("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                 "eyJhbGciOiJIUzI1NiJ9", id="jwt"),
    pytest.param("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
                 "b3BlbnNzaC1rZXk", id="pem"),
    pytest.param("engine = create_engine('postgres://ann:s3cr3t-pw@db.example.com:5432/sales')", "s3cr3t-pw",
                 id="postgres-url"),
    pytest.param("https://ann:hunter2x@example.com/data.csv", "hunter2x", id="https-url"),
    pytest.param("redis://:R3disPass@cache:6379/0", "R3disPass", id="redis-url-no-user"),
    pytest.param('requests.get(url, headers={"Authorization": "Bearer 9f8e7d6c5b4a39281706"})', "9f8e7d6c5b4a",
                 id="bearer-header"),
    # Literals after secret names (assignments, keys, kwargs, environ, annotations, comparisons).
    pytest.param('DB_PASSWORD="S3cure!pass"', "S3cure!pass", id="env-style-assignment"),
    pytest.param('conn = connect(host="db", password="hunter2hunter2")', "hunter2hunter2", id="kwarg"),
    pytest.param('config = {"api_key": "abc123def456ghi"}', "abc123def456ghi", id="dict-key"),
    pytest.param('os.environ["HF_TOKEN"] = "abcd1234efgh5678"', "abcd1234efgh5678", id="environ-item"),
    pytest.param("client_secret: 'Zq9-Xr7_Wp5'", "Zq9-Xr7_Wp5", id="yaml-client-secret"),
    pytest.param("secret_key = 'Django-Insecure-9x'", "Django-Insecure-9x", id="secret-key"),
    pytest.param("private_key = 'MIIEvQIBADANBg'", "MIIEvQIBADANBg", id="private-key"),
    pytest.param("AWS_ACCESS_KEY = 'AbCd1234EfGh'", "AbCd1234EfGh", id="access-key"),
    pytest.param("apikey='Key-2024-abcdef'", "Key-2024-abcdef", id="apikey-glued"),
    pytest.param("credentials = 'user:Pa55word'", "user:Pa55word", id="credentials"),
    pytest.param("auth_token = 'at_93jd83hf'", "at_93jd83hf", id="auth-token"),
    pytest.param("db_pwd = 'qwerty12345'", "qwerty12345", id="qualified-pwd"),
    pytest.param("secretAccessKey: 'AbC123dEf456'", "AbC123dEf456", id="camel-case"),
    pytest.param('api_key: str = "abc123def456"', "abc123def456", id="annotated"),
    pytest.param('if password == "letmein2024":', "letmein2024", id="comparison"),
    pytest.param('api_key: Optional[str] = "abc123def456"', "abc123def456", id="annotated-optional"),
    pytest.param('password: str | None = "hunter2hunter2"', "hunter2hunter2", id="annotated-union"),
    # Passed by position after the secret's name in quotes.
    pytest.param('os.environ.setdefault("API_KEY", "abc123def456ghi")', "abc123def456ghi", id="environ-setdefault"),
    pytest.param("token = os.getenv('HF_TOKEN', 'hf-local-9x8y7z6w')", "hf-local-9x8y7z6w", id="getenv-default"),
    pytest.param("pw = settings.get('password' ,  \"Pa55word!x\")", "Pa55word!x", id="get-default"),
]

MUST_SURVIVE = [
    pytest.param(_pandas_key_error(), id="pandas-keyerror-traceback"),
    pytest.param("KeyError: 'Price'", id="keyerror"),
    pytest.param("KeyError: 'token_count'", id="keyerror-token-count"),
    pytest.param("KeyError: 'api_key'", id="keyerror-api-key"),
    pytest.param("KeyError: \"['Price', 'Quantity'] not in index\"", id="keyerror-list"),
    pytest.param("TokenError: 'unterminated_string_2'", id="token-error"),
    pytest.param("{'key': 'Price', 'token_count': 'abc', 'password': 'short'}", id="dict-in-traceback"),
    pytest.param("token_count: 'abcdefgh'", id="token-count-key"),
    pytest.param("df['password_reset_count'].sum()", id="column-password-reset-count"),
    pytest.param('df["api_key_count"] = df["api_key_count"].fillna(0)', id="column-api-key-count"),
    pytest.param('key = os.environ["OPENAI_API_KEY"]', id="environ-read"),
    pytest.param('os.environ["OPENAI_API_KEY"]', id="environ-shape"),
    pytest.param("api_key = os.getenv('OPENAI_API_KEY')", id="getenv"),
    pytest.param('api_key = os.getenv("OPENAI_API_KEY", "EMPTY")', id="getenv-placeholder-default"),
    pytest.param('df[["api_key", "created_at"]]', id="column-list"),
    pytest.param('def connect(api_key: str = "OPENAI_API_KEY", retries: int = 3):', id="annotated-env-name"),
    pytest.param('if ready: label = "abc123def456"', id="colon-before-a-plain-name"),
    pytest.param("api_key_env = 'OPENAI_API_KEY'", id="env-var-name"),
    pytest.param("tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')", id="tokenizer"),
    pytest.param("token = tokenize(text)", id="token-no-literal"),
    pytest.param("key = 'Price'", id="bare-key"),
    pytest.param('sort_key = "customer_id"', id="sort-key"),
    pytest.param('join_key = "customer_id"', id="join-key"),
    pytest.param("merged = a.merge(b, on=join_key)", id="join-key-use"),
    pytest.param("password_reset_count = 3", id="password-reset-count"),
    pytest.param('pwd = "/home/user/project"', id="pwd-is-a-directory"),
    pytest.param("PWD=/home/user/project", id="pwd-env"),
    pytest.param('token_col = "token_count"', id="token-col"),
    pytest.param("password_col = 'Password_Hash'", id="password-col"),
    pytest.param("secret_name = 'prod-db-password'", id="secret-name"),
    pytest.param("token_url = 'https://auth.example.com/oauth/token'", id="token-url"),
    pytest.param("credentials_file = 'credentials.json'", id="credentials-file"),
    pytest.param("api_key = 'short'", id="short-value"),
    pytest.param('password = "{password}"', id="placeholder"),
    pytest.param("url = f'postgresql://{user}:{password}@{host}/db'", id="url-template"),
    pytest.param("postgres://ann@db.example.com/sales", id="url-no-password"),
    pytest.param("http://example.com:8080/a@b", id="port-not-password"),
    pytest.param("ssh://git@github.com:22/repo.git", id="ssh-url"),
    pytest.param('error: "password must be at least 8 characters"', id="message-with-spaces"),
    pytest.param("# Cleaning\n\nThe **key** insight: 'Price' is a string. Use a token: 'the'.", id="markdown"),
    pytest.param("The basic idea: a bearer of bad news.", id="prose-basic-bearer"),
    pytest.param("max_tokens = 4096\ntokens = text.split()", id="max-tokens"),
]


@pytest.mark.parametrize("text, secret", MUST_MASK)
def test_must_mask(text: str, secret: str) -> None:
    masked = mask_secrets(text, KNOWN)
    assert secret not in masked
    assert MASK in masked


@pytest.mark.parametrize("text", MUST_SURVIVE)
def test_must_survive(text: str) -> None:
    assert mask_secrets(text, KNOWN) == text
    assert masked_cut(text, 10_000, KNOWN) == text


def test_urls_keep_scheme_user_and_host() -> None:
    assert mask_secrets("postgres://ann:s3cr3t-pw@db.example.com:5432/sales") == \
        "postgres://ann:***@db.example.com:5432/sales"
    assert mask_secrets("os.environ['HF_TOKEN'] = 'abcd1234efgh5678'") == "os.environ['HF_TOKEN'] = '***'"


def test_secret_values_of_the_scenario() -> None:
    assert set(KNOWN) == {OPENAI_KEY, DB_PASSWORD, AZURE_KEY, AWS_SECRET, NB_AWS_SECRET, NB_API_TOKEN}
    assert [len(v) for v in KNOWN] == sorted((len(v) for v in KNOWN), reverse=True)


def test_secret_values_rules() -> None:
    ns = {
        "db_password": "c0rrect-horse",  # credential-like
        # Whatever a secret-named variable's value looks like, 8 characters or more (review #30):
        "sales_password": "sales_2024",  # words and a number
        "db_passphrase": "correct-horse-battery-staple",  # a passphrase of plain words
        "api_token": "plain-token-value-123",
        "token": "customer_id",  # a plain word: masked too; a column kept under such a name is rare
        "client_secret": "{client_secret}",  # a placeholder: masking it costs nothing
        "passphrase": "correct horse battery",  # whitespace is allowed in a variable
        "token_text": "New York",
        "api_key": "short",  # too short
        "pass_word": "        ",  # only whitespace: would blank every indent
        "sort_key": "x9Y8z7W6v5",  # a data key, whatever its value
        "key": "x9Y8z7W6v5",  # a bare key is a dict's, not a secret
        "tokenizer": "x9Y8z7W6v5",
        "token_count": "x9Y8z7W6v5",
        "secret_col": "x9Y8z7W6v5",
        "github_token": b"ghp_bytesAreDecoded12345",
        "n_tokens": 3,
        "_i12": "hf_token = 'abc123def456'",  # IPython's history
        "_oh": {1: "x"},
        "_": "x9Y8z7W6v5-last-output",
        "_private_token": "pr1v-4te-9876",  # a user's own underscore name
    }
    env = {
        "GITHUB_TOKEN": "plain-looking-value",  # the environment: any value counts
        "SOME_AUTH": "abcdefgh",
        "MY_KEY": "has whitespace inside",  # a broad name: whitespace says it is not a key
        "DB_PASSPHRASE": "env horse battery staple",  # a narrow one: a passphrase
        "API_KEY_SHORT": "abc",
        "HOME": "/home/user",
        "PWD": "/home/user/project",
    }
    assert secret_values(ns, env) == (
        "correct-horse-battery-staple", "env horse battery staple", "ghp_bytesAreDecoded12345",
        "correct horse battery", "plain-token-value-123", "plain-looking-value", "{client_secret}",
        "c0rrect-horse", "pr1v-4te-9876", "customer_id", "sales_2024", "New York", "abcdefgh",
    )
    assert mask_secrets("passphrase = 'correct horse battery'", secret_values(ns, {})) == "passphrase = '***'"


def test_a_secret_named_variable_is_masked_whatever_its_value_looks_like() -> None:
    # Review #30, finding 1: a passphrase of words went to the model in the cell's source and
    # in the output of generated code that printed it.
    ns = {"db_password": "correct-horse-battery-staple", "api_token": "plain-token-value-123"}
    known = secret_values(ns, {})
    cell = "db_password = 'correct-horse-battery-staple'\napi_token = 'plain-token-value-123'"
    output = "connecting with correct-horse-battery-staple / plain-token-value-123"
    assert mask_secrets(cell, known) == "db_password = '***'\napi_token = '***'"
    assert mask_secrets(output, known) == "connecting with *** / ***"
    # A cell not run yet (the panel and the command line send the notebook's cells): its literal.
    assert mask_secrets(cell) == "db_password = '***'\napi_token = '***'"
    assert mask_secrets('db_passphrase = "correct horse battery staple"') == 'db_passphrase = "***"'
    assert mask_secrets('connect(password="correct horse battery staple")') == 'connect(password="***")'
    # Still kept: after ":" a text with spaces is a message; by position, a list of columns; an
    # environment variable's name; a placeholder.
    for kept in ('{"password": "must be 8 characters or more"}', 'df[["api_key", "created_at"]]',
                 'api_key: str = "OPENAI_API_KEY"', 'password = "{password}"'):
        assert mask_secrets(kept) == kept


@pytest.mark.parametrize("name, holds", [
    ("aws_secret", True), ("api_token", True), ("DB_PASSWORD", True), ("HF_TOKEN", True), ("apiKey", True),
    ("AWS_SECRET_ACCESS_KEY", True), ("dbpassword", True), ("db_pwd", True), ("client_secret", True),
    ("credentials", True), ("auth_token", True), ("private_key", True),
    ("key", False), ("sort_key", False), ("join_key", False), ("KeyError", False), ("tokenizer", False),
    ("token_count", False), ("api_key_count", False), ("password_reset_count", False), ("pwd", False),
    ("PWD", False), ("OLDPWD", False), ("max_tokens", False), ("author", False), ("TokenError", False),
])
def test_holds_secret_is_narrow(name: str, holds: bool) -> None:
    assert holds_secret(name) is holds


def test_is_secret_name_stays_broad() -> None:
    # Such a variable's value is never described, even when it is not masked.
    assert is_secret_name("sort_key") and is_secret_name("tokenizer") and is_secret_name("token_count")
    # Never narrower than holds_secret: db_passphrase was masked but described (review #30).
    assert is_secret_name("db_passphrase") and is_secret_name("DB_PASSPHRASE") and is_secret_name("db_pwd")
    assert not is_secret_name("pwd") and not is_secret_name("author")


class _Recorder:
    def __init__(self) -> None:
        self.sent: list[Message] = []

    def complete(self, messages: list[Message], on_text: object = None, temperature: object = None,
                 n: int = 1) -> ModelReply:
        self.sent = list(messages)
        return ModelReply("")


def test_a_fix_request_keeps_the_column_and_loses_the_keys() -> None:
    recorder = _Recorder()
    client = MaskingClient(recorder, lambda: KNOWN)
    output = f"{ENVIRON}\n{_pandas_key_error()}"
    client.complete([Message("user", f"The code failed:\n{output}\nFix it.")])
    sent = recorder.sent[0].content
    assert "KeyError: 'Price'" in sent
    assert not any(secret in sent for secret in KNOWN)
