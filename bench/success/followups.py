"""Follow-up tasks: a request that builds on the one before it, in the same notebook.

Issue #37 sends a follow-up after the earlier request as it was sent, plus only what changed
(``context/since.py``), so that the model's prompt cache holds most of it.  Whether a small model
answers a follow-up as well from that as from a fresh, whole context is what these measure
(``--suite followups``: every task both ways, in one run).  Each task's earlier requests (its
``before``) are asked through the loop first and not graded; the last request is graded against
a reference that reads the files itself, so a wrong earlier turn costs only what it would cost
a person.  Written before any run on them; never to tune on single tasks.
"""

from __future__ import annotations

from jupyter_ai_ci.executors.kernel import KernelExecutor
from jupyter_ai_ci.run.report import SilentReporter, Timings
from jupyter_ai_ci.run.flow import RemoteKernel, run_async
from jupyter_ai_ci.run.request import Run
from jupyter_ai_ci.run.session import Session

from .suite import AB, EMP, PD, SENS
from .tasks import Task

SALES_IN = ("Load sales.csv into a DataFrame named sales and add a revenue column (units * unit_price).",
            "import pandas as pd\nsales = pd.read_csv('sales.csv')\nsales['revenue'] = sales['units'] * "
            "sales['unit_price']\nsales.head()")
EMP_IN = ("Load employees.csv as a DataFrame named emp, with hire_date parsed as dates.",
          "import pandas as pd\nemp = pd.read_csv('employees.csv', parse_dates=['hire_date'])\nemp.head()")
CUST_IN = ("Load customers_raw.csv as a DataFrame named cust and drop its exact duplicate rows.",
           "import pandas as pd\ncust = pd.read_csv('customers_raw.csv').drop_duplicates()\nlen(cust)")
SENS_IN = ("Load sensors.csv as a DataFrame named readings, with timestamp parsed as dates.",
           "import pandas as pd\nreadings = pd.read_csv('sensors.csv', parse_dates=['timestamp'])\nreadings.head()")
AB_IN = ("Load ab_test.csv as a DataFrame named ab.", "import pandas as pd\nab = pd.read_csv('ab_test.csv')\nab.head()")
SALES = PD + "s = pd.read_csv('sales.csv')\ns['revenue'] = s['units'] * s['unit_price']\n"
CUST = PD + "c = pd.read_csv('customers_raw.csv').drop_duplicates()\n"

FOLLOWUPS: list[Task] = [
    Task("fu_region_revenue", "follow-up", "Now the total revenue per region. answer: a dict region -> float.",
         SALES + "answer = s.groupby('region')['revenue'].sum().to_dict()", before=(SALES_IN,)),
    Task("fu_top_product", "follow-up", "Which product sold the most units in total? answer: the product "
         "name, a str.", SALES + "answer = s.groupby('product')['units'].sum().idxmax()", before=(SALES_IN,)),
    Task("fu_north_orders", "follow-up", "How many orders are in it? answer: an int.",
         SALES + "answer = int((s['region'] == 'North').sum())",
         before=(SALES_IN, ("Keep only the orders of the North region, in a DataFrame named north.",
                            "north = sales[sales['region'] == 'North']\nlen(north)"))),
    Task("fu_engineering_age", "follow-up", "What is the median age in its Engineering dept? answer: a float.",
         EMP + "answer = float(e.loc[e['dept'] == 'Engineering', 'age'].median())", before=(EMP_IN,)),
    Task("fu_hired_since_2015", "follow-up", "How many of them were hired in 2015 or later? answer: an int.",
         EMP + "answer = int((e['hire_date'].dt.year >= 2015).sum())", before=(EMP_IN,)),
    Task("fu_corporate_left", "follow-up", "How many of the customers left are in the Corporate segment? "
         "answer: an int.", CUST + "answer = int((c['segment'] == 'Corporate').sum())", before=(CUST_IN,)),
    Task("fu_no_email_share", "follow-up", "What fraction of them have no email? answer: a float between 0 "
         "and 1.", CUST + "answer = float(c['email'].isna().mean())", before=(CUST_IN,)),
    Task("fu_hottest_sensor", "follow-up", "Which sensor recorded the highest temperature? answer: the "
         "sensor name, a str.", SENS + "answer = t.loc[t['temperature'].idxmax(), 'sensor']", before=(SENS_IN,)),
    Task("fu_mean_humidity", "follow-up", "And the mean humidity of each sensor over the whole period? "
         "answer: a dict sensor -> float.", SENS + "answer = t.groupby('sensor')['humidity'].mean().to_dict()",
         before=(SENS_IN,)),
    Task("fu_conversion_rate", "follow-up", "The conversion rate of each group in it. answer: a dict group -> "
         "float.", AB + "answer = ab.groupby('group')['converted'].mean().to_dict()", before=(AB_IN,)),
]


def scripted(task: Task) -> list[str]:
    """The scripted model's replies to a task's earlier requests: the code each names."""
    return [f"Here is the code.\n```python\n{code}\n```\n" for _, code in task.before]


async def ask_before(session: Session, task: Task, executor: KernelExecutor, timings: Timings) -> None:
    """The task's earlier requests, each through the loop in ``session`` (the notebook's
    conversation), as a person asks them; not graded (a failed one stays failed)."""
    for request, _ in task.before:
        run = Run(session, request, source="bench")
        await run_async(run, RemoteKernel(executor.evaluate), executor, SilentReporter(), None, timings)
