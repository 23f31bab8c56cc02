"""The risk scan, snippet by snippet: what it must flag (with the reason the user reads)
and the ordinary analysis code it must leave alone.

Each row is (code, expected reason fragment or None for "must not be flagged").  The
verdict is checked both on the scan and on the default policy's decision, so a row fails
if a rule stops firing, fires with another reason, or starts flagging analysis code.
"""

from __future__ import annotations

import ast

import pytest

from jupyter_ai_ci.safety.policy import PolicySettings, decide, scan

OUTSIDE = "writes outside the working directory: "

FLAGGED: list[tuple[str, str]] = [
    # Writes outside the working directory, or to a path only known at run time.
    ("df.to_csv('../data/sales.csv')", OUTSIDE + "'../data/sales.csv'"),
    ("df.to_parquet('/tmp/sales.parquet')", OUTSIDE + "'/tmp/sales.parquet'"),
    ("df.to_excel('~/report.xlsx', index=False)", OUTSIDE + "'~/report.xlsx'"),
    ("df.to_json(path)", "writes to a computed path: path"),
    ("df.to_pickle(f'{base}/x.pkl')", "writes to a computed path: f'{base}/x.pkl'"),
    ("import matplotlib.pyplot as plt\nplt.savefig('/var/www/html/fig.png')", OUTSIDE + "'/var/www/html/fig.png'"),
    ("out = 'results/../../x.csv'\ndf.to_csv(out)", OUTSIDE + "'results/../../x.csv'"),
    ("from pathlib import Path\ndf.to_feather(Path.home() / 'x.feather')", OUTSIDE + "'~/x.feather'"),
    ("for region, g in df.groupby('region'):\n    g.to_csv(f'{region}.csv')", "computed path: f'{region}.csv'"),
    ("import numpy as np\nnp.save('/tmp/arr.npy', np.arange(3))", OUTSIDE + "'/tmp/arr.npy'"),
    ("df.to_csv('s3://bucket/sales.csv')", OUTSIDE + "'s3://bucket/sales.csv'"),
    ("from pathlib import Path\n(Path.home() / '.bashrc').open('a')", OUTSIDE + "'~/.bashrc'"),
    ("from pathlib import Path\nPath('~/.ssh/config').write_text('Host *')", OUTSIDE + "'~/.ssh/config'"),
    ("from pathlib import Path\nPath('/etc/cron.d/job').write_bytes(b'')", OUTSIDE + "'/etc/cron.d/job'"),
    ("from pathlib import Path\np = Path.home() / '.profile'\np.touch()",
     "creates a file outside the working directory: '~/.profile'"),
    ("from pathlib import Path\nPath('../shared').mkdir()",
     "creates a directory outside the working directory: '../shared'"),
    ("from pathlib import Path\nPath(out_dir).mkdir(parents=True)", "creates a directory at a computed path"),
    ("from pathlib import Path\nPath('a.txt').rename('/tmp/a.txt')",
     "renames (may overwrite) a file: 'a.txt' -> '/tmp/a.txt'"),
    ("open('/etc/hosts', 'a')", OUTSIDE + "'/etc/hosts'"),
    ("import os\nopen(os.path.expanduser('~/.bashrc'), 'w')", OUTSIDE + "'~/.bashrc'"),
    ("import os\nwith open(os.path.join('..', 'notes.txt'), 'w') as f:\n    f.write('x')", OUTSIDE + "'../notes.txt'"),
    ("open(target, 'wb').write(data)", "writes to a computed path: target"),
    # Copies, moves and deletions.
    ("import os, shutil\nshutil.copy('key.pub', os.path.expanduser('~/.ssh/authorized_keys'))",
     "copies outside the working directory: '~/.ssh/authorized_keys'"),
    ("import shutil\nshutil.copytree('src', '/opt/src')", "copies outside the working directory: '/opt/src'"),
    ("import shutil\nshutil.move('a.csv', '/tmp/a.csv')", "moves (may overwrite) files: 'a.csv' -> '/tmp/a.csv'"),
    ("import shutil\nshutil.rmtree('build')", "deletes a directory tree: 'build'"),
    ("import os\nos.remove('../a.csv')", "deletes a file: '../a.csv'"),
    ("import os\nos.replace(tmp, 'data.csv')", "overwrites a file: tmp -> 'data.csv'"),
    # Imports and lookups by a string, eval/exec/compile.
    ("import importlib\nimportlib.import_module('os').system('ls')", "runs a shell command"),
    ("import importlib\nm = importlib.import_module('subprocess')\nm.run(['ls'])", "starts a process"),
    ("import importlib\nm = importlib.import_module('subprocess')", "imports 'subprocess' by a string"),
    ("__import__('os').system('id')", "imports 'os' by a string"),
    ("import os\ngetattr(os, 'system')('ls')", "runs a shell command (looked up with getattr)"),
    ("getattr(__builtins__, 'exec')('print(1)')", "executes a string as code"),
    ("import os\nrun = getattr(os, 'sys' + 'tem')", "looks up a name in os computed at run time"),
    ("import importlib\nimportlib.import_module(name)", "imports a module whose name is computed at run time"),
    ("import os\nsh = os.system\nsh('rm -rf data')", "runs a shell command"),
    ("import sys\nsys.modules['os'].system('ls')", "runs a shell command"),
    ("result = eval(expression)", "evaluates a string as code"),
    ("code = compile(source, '<source>', 'exec')", "compiles a string as code"),
    ("import builtins\nbuiltins.exec('x = 1')", "executes a string as code"),
    # Star imports from risky modules (issue #30, item 8): their names resolve to the module's functions.
    ("from subprocess import *\nrun(['rm', '-rf', 'data'])", "subprocess.run: starts a process"),
    ("from shutil import *\nrmtree('data')", "shutil.rmtree: deletes a directory tree: 'data'"),
    ("from shutil import *\ncopy('key.pub', '/root/.ssh/authorized_keys')",
     "copies outside the working directory: '/root/.ssh/authorized_keys'"),
    ("from os import *\nsystem('id')", "os.system: runs a shell command"),
    ("from os import *\nfrom subprocess import *\nr = run\nr(['id'])", "starts a process"),
    ("from json import *\neval(expression)", "evaluates a string as code"),  # json has no eval: the builtin
    ("from requests_like_unknown import *\nfrom paramiko import *\nconnect('h')",
     "from paramiko import *: imports every name of a module with risky calls"),
    # Leaving the working directory first, then writing "inside" it (issue #30, item 7).
    ("import os\nos.chdir('..')\ndf.to_csv('sales.csv')", "os.chdir: changes the working directory"),
    ("from os import chdir\nchdir('/tmp')", "changes the working directory"),
    ("import os\nos.fchdir(fd)", "changes the working directory"),
    ("import contextlib\nwith contextlib.chdir('..'):\n    open('x', 'w')", "changes the working directory"),
    ("get_ipython().run_line_magic('cd', '..')\nopen('notes.txt', 'w')", "%cd: changes the working directory"),
    ("get_ipython().magic('cd ..')", "%cd: changes the working directory"),
    ("import os\ngetattr(os, 'chdir')('..')", "changes the working directory"),
    ("from os import *\nchdir('..')", "changes the working directory"),
    # Destructive SQL.
    ("cur.execute('DROP TABLE sales')", "drops a database table: 'DROP TABLE sales'"),
    ("conn.execute(\"delete from sales\")", "deletes every row of a table (no WHERE)"),
    ("cur.execute('TRUNCATE TABLE sales')", "empties a database table"),
    ("conn.execute('ALTER TABLE sales DROP COLUMN region')", "drops part of a database table"),
    ("from sqlalchemy import text\nwith engine.begin() as c:\n    c.execute(text('DROP TABLE users'))",
     "drops a database table: 'DROP TABLE users'"),
    ("import pandas as pd\npd.read_sql('DROP TABLE t', conn)", "drops a database table"),
    ("cur.executescript('CREATE TABLE a (x INT); DROP TABLE b;')", "drops a database table: 'DROP TABLE b'"),
    ("sql = 'Drop Table orders'\ncur.execute(sql)", "drops a database table: 'Drop Table orders'"),
    ("cur.execute(f'DROP TABLE {table}')", "drops a database table"),
    ("cur.execute('UPDATE sales SET revenue = 0')", "changes every row of a table (no WHERE)"),
    ("import sqlite3\nconn = sqlite3.connect('shop.db')\nconn.execute('DROP TABLE IF EXISTS t')",
     "drops a database table"),
]

ALLOWED: list[str] = [
    "import pandas as pd\ndf = pd.read_csv('sales.csv')\ndf.groupby('region')['revenue'].sum().plot(kind='bar')",
    "merged = df.merge(other, on='id', how='left')\nmerged.pivot_table(index='region', values='revenue')",
    "df.to_csv('summary.csv', index=False)",
    "df.to_csv('results/out.csv')",
    "df.to_csv('./out/../summary.csv')",
    "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('fig.png', dpi=150)",
    "import matplotlib.pyplot as plt\nfor i in range(3):\n    plt.savefig(f'fig_{i:02d}.png')",
    "name = 'summary'\ndf.to_csv(f'{name}.csv')",
    "text = open('data.csv').read()",
    "with open('data.csv', encoding='utf-8') as f:\n    rows = f.readlines()",
    "import pandas as pd\nfrom pathlib import Path\ndf = pd.read_csv(Path('data') / 'x.csv')",
    "from pathlib import Path\nout = Path('results')\nout.mkdir(exist_ok=True)\ndf.to_csv(out / 'b.csv')",
    "import os\nos.makedirs('results', exist_ok=True)\ndf = pd.read_csv(os.path.join('data', 'x.csv'))",
    "import json\njson.dump(obj, open('out.json', 'w'))",
    "with open('out.csv', 'w', newline='') as f:\n    df.to_csv(f)",
    "import io\nbuf = io.StringIO()\ndf.to_csv(buf)",
    "payload = df.to_json(orient='records')",
    "import pandas as pd\nrows = pd.read_sql('SELECT region, SUM(revenue) FROM sales GROUP BY region', conn)",
    "import sqlite3\nconn = sqlite3.connect(':memory:')\nconn.execute('CREATE TABLE t (a INTEGER)')\n"
    "conn.execute('INSERT INTO t VALUES (?)', (1,))\nconn.commit()",
    "import sqlite3\nconn = sqlite3.connect(':memory:')\ncur = conn.cursor()\ncur.execute('DROP TABLE IF EXISTS t')",
    "cur.execute('DELETE FROM t WHERE id = ?', (3,))\ncur.execute('UPDATE t SET a = 1 WHERE id = 2')",
    "cur.execute(\"INSERT INTO log VALUES ('drop table x')\")",
    "import importlib\nimportlib.reload(mymodule)",
    "import importlib\nyaml = importlib.import_module('yaml')",
    "m = getattr(df, 'mean')()",
    "import numpy as np\nagg = getattr(np, how)(values)",
    "df['name'] = df['name'].str.replace('a', 'b')\ndf = df.rename(columns={'a': 'b'})",
    "import re\npattern = re.compile(r'\\d+')",
    "df.query('revenue > 100')",
    "import pandas as pd\nwith pd.ExcelWriter('report.xlsx') as writer:\n    df.to_excel(writer, sheet_name='a')",
    "import shutil\nshutil.copy('data.csv', 'backup/data.csv')",
    "open('notes.txt', 'a').write('done\\n')",
    "from PIL import Image\nimg = Image.open('photo.png')\nimg.save('thumb.png')",
    "print(df.describe(), file=open('log.txt', 'a'))",
    "from pathlib import Path\np = Path.cwd() / 'out.txt'\np.write_text('ok')",
    "import numpy as np\nnp.savetxt('arr.txt', np.arange(3))",
    "fig.write_html('chart.html')",
    "from pathlib import Path\nPath('report.md').write_text(Path('template.md').read_text())",
    "import os\nexists = os.path.exists('/etc/hosts')",
    "import pandas as pd\nshared = pd.read_csv('/data/shared/sales.csv')",
    "from math import *\nroot = sqrt(2) * pi",
    "from shutil import *\ncopy('data.csv', 'backup/data.csv')",
]


def test_the_table_is_big_and_balanced() -> None:
    assert len(FLAGGED) + len(ALLOWED) >= 60
    assert min(len(FLAGGED), len(ALLOWED)) >= 25


@pytest.mark.parametrize("code, reason", FLAGGED + [(code, None) for code in ALLOWED])
def test_scan_verdict(code: str, reason: str | None) -> None:
    ast.parse(code)  # every row is plain Python, not IPython syntax
    found = scan([code])
    described = [risk.describe() for risk in found.risks]
    decision = decide(PolicySettings(), found)
    if reason is None:
        assert described == [], f"ordinary code flagged: {described}"
        assert decision.verdict == "run"
    else:
        assert any(reason in d for d in described), f"expected {reason!r} in {described}"
        assert decision.verdict == "ask" and any(reason in r for r in decision.reasons)
