"""Held-out tasks: the same data files, questions the prompts were never tuned on.

Written before any run of the tuned prompts on them, and never used to tune: they tell
whether a change to the prompts or the context helps on questions outside the suite, or
only on the suite (``--suite heldout``).  The same rules as the suite: each prompt names its
file and the shape of ``answer``, the reference is plain pandas.
"""

from __future__ import annotations

from .suite import AB, CUST, EMP, PD, REVENUE, SALES, SENS
from .tasks import Task

HELDOUT: list[Task] = [
    Task("segment_customers", "cleaning", "In customers_raw.csv (duplicates dropped), the number of distinct "
         "customer_id values in each segment. answer: a dict segment -> int.",
         CUST + "answer = {k: int(v) for k, v in c.groupby('segment')['customer_id'].nunique().items()}"),
    Task("orders_per_region", "groupby", "Number of orders per region in sales.csv. answer: a dict region -> "
         "int.", PD + "answer = pd.read_csv('sales.csv')['region'].value_counts().to_dict()"),
    Task("biggest_order", "groupby", "The order_id of the order with the most units in sales.csv; on a tie "
         "the smallest order_id. answer: an int.",
         PD + "s = pd.read_csv('sales.csv')\nanswer = int(s.loc[s['units'] == s['units'].max(), 'order_id'].min())"),
    Task("engineering_salary", "groupby", "Mean salary in the Engineering dept of employees.csv. answer: a "
         "float.", EMP + "answer = e.loc[e['dept'] == 'Engineering', 'salary'].mean()"),
    Task("oldest_dept", "groupby", "Which dept in employees.csv has the highest mean age? answer: the dept "
         "name, a str.", EMP + "answer = e.groupby('dept')['age'].mean().idxmax()"),
    Task("price_range", "groupby", "For each product in sales.csv, the highest unit_price minus the lowest. "
         "answer: a dict product -> float.",
         PD + "g = pd.read_csv('sales.csv').groupby('product')['unit_price']\nanswer = (g.max() - g.min()).to_dict()"),
    Task("hires_per_year", "dates", "Number of employees hired in each year in employees.csv. answer: a dict "
         "year as a 'YYYY' str -> int.",
         EMP + "answer = {str(k): int(v) for k, v in e['hire_date'].dt.year.value_counts().items()}"),
    Task("weekend_share", "dates", "What fraction of the orders in sales.csv were placed on a Saturday or "
         "Sunday? answer: a float between 0 and 1.",
         PD + "s = pd.read_csv('sales.csv', parse_dates=['date'])\n"
         "answer = float((s['date'].dt.dayofweek >= 5).mean())"),
    Task("first_order_month", "dates", "In which month did customer_id 7 place their first order in sales.csv? "
         "answer: the month as a 'YYYY-MM' str.",
         PD + "s = pd.read_csv('sales.csv')\nanswer = s.loc[s['customer_id'] == 7, 'date'].min()[:7]"),
    Task("humidity_median", "stats", "Median humidity per sensor in sensors.csv. answer: a dict sensor -> "
         "float.", SENS + "answer = t.groupby('sensor')['humidity'].median().to_dict()"),
    Task("treatment_revenue", "stats", "Mean revenue per user of the treatment group in ab_test.csv, over all "
         "its users (those who did not convert count as 0). answer: a float.",
         AB + "answer = ab.loc[ab['group'] == 'treatment', 'revenue'].mean()"),
    Task("top3_customers", "join", f"{REVENUE} The three customer_id values with the highest total revenue, "
         "highest first. answer: a list of 3 ints.",
         SALES + "answer = [int(i) for i in s.groupby('customer_id')['revenue'].sum().nlargest(3).index]"),
    Task("temp_gap_rows", "cleaning", "How many rows of sensors.csv have no temperature but do have a "
         "humidity reading? answer: an int.",
         SENS + "answer = int((t['temperature'].isna() & t['humidity'].notna()).sum())"),
]
