"""An SDK or transport exception, as one line that says what to do (``map_error``).

Neither the loop nor the person ever sees an SDK traceback: every failure of a request becomes one
of the ``ModelError`` family, naming where the request went and what to check.
"""

from __future__ import annotations

import json
import os

from jupyter_ai_ci.errors import (
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    ModelServerError,
    ModelUnreachable,
)
from jupyter_ai_ci.model import transport
from jupyter_ai_ci.model.endpoint import KEY_KEPT_ENV, KEY_KEPT_HELP, Endpoint
from jupyter_ai_ci.model.reply import StreamError

__all__ = ["map_error"]


def map_error(exc: BaseException, endpoint: Endpoint) -> ModelError:
    """Turn an SDK or transport exception into one line that says what to do."""
    import openai

    where = endpoint.host
    if isinstance(exc, ModelError):
        return exc
    # Read errors while we read the body (the SDK wraps only those it reads itself).
    library = transport.http_library()
    if isinstance(exc, openai.APITimeoutError) or isinstance(exc, library.TimeoutException):
        # The SDK tries a request that timed out again (not a reply that stalled while we read it).
        tried = _tries(endpoint) if isinstance(exc, openai.APITimeoutError) else ""
        return ModelUnreachable(
            f"the model at {where} did not answer within {endpoint.timeout:g} s{tried}; "
            "try again, or raise AICISettings.request_timeout"
        )
    if isinstance(exc, openai.APIConnectionError):
        return ModelUnreachable(
            f"cannot reach the model at {where}: is the server running and {endpoint.base_url_from} right?"
        )
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        if not endpoint.api_key and os.environ.get(KEY_KEPT_ENV):
            # A base URL reached this kernel, the key did not (found by hand: "check OPENAI_API_KEY",
            # which was right, in the server's environment).
            return ModelAuthError(f"{where} asked for an API key ({exc.status_code}), and {KEY_KEPT_HELP}")
        return ModelAuthError(
            f"{where} rejected the API key ({exc.status_code}): check {endpoint.api_key_from}"
        )
    if isinstance(exc, openai.RateLimitError):
        return ModelRateLimited(
            f"{where} is rate limiting requests (429) even after {endpoint.max_retries} retries "
            "with backoff; wait a minute and try again, or check your quota"
        )
    if isinstance(exc, openai.NotFoundError):
        return ModelServerError(
            f"{where} answered 404 for model {endpoint.model!r}: check the model name "
            "and the base URL (it usually ends in /v1)"
        )
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code in (400, 422) and endpoint.request_extra:
            # A field of the user's the server does not take (OpenAI refuses unknown ones).
            names = ", ".join(json.loads(endpoint.request_extra))
            return ModelServerError(
                f"{where} refused the request ({exc.status_code}) for model {endpoint.model!r}: "
                f"check that it takes the fields AICISettings.request_extra adds ({names})"
            )
        # The SDK tries a 5xx again, as it does a 429 (whose line says so too).
        tried = _tries(endpoint) if exc.status_code >= 500 else ""
        return ModelServerError(
            f"{where} answered {exc.status_code} for model {endpoint.model!r}{tried}; "
            "try again later or check the server's log"
        )
    if isinstance(exc, library.TransportError):
        return ModelServerError(f"the reply from {where} was cut off mid-stream; try again")
    if isinstance(exc, StreamError):
        return ModelServerError(f"{where} reported an error in the middle of its reply; try again")
    return ModelServerError(
        f"the reply from {where} was cut off or malformed ({type(exc).__name__}); try again"
    )


def _tries(endpoint: Endpoint) -> str:
    """``, 4 tries`` for an error the SDK retried (nothing when it was not allowed to)."""
    return f", {endpoint.max_retries + 1} tries" if endpoint.max_retries else ""
