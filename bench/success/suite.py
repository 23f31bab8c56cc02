"""The task suite: data-analysis requests over the generated CSVs, written for this project.

Each prompt names its file and the exact shape of ``answer`` (rounding, keys,
types), as a careful user would; the reference solution is the plain pandas a
reviewer would accept.  Categories: cleaning, groupby, join, dates, stats,
plot, import (needs a package beyond pandas).
"""

from __future__ import annotations

from .tasks import Task, bar_count, bars_match, line_matches, same_set

PD = "import pandas as pd\n"
SALES = PD + "s = pd.read_csv('sales.csv')\ns['revenue'] = s['units'] * s['unit_price']\n"
CUST = PD + ("c = pd.read_csv('customers_raw.csv').drop_duplicates()\n"
             "c['country'] = c['country'].str.strip().str.lower().map({'us': 'US', 'usa': 'US', "
             "'united states': 'US', 'uk': 'UK', 'united kingdom': 'UK', 'de': 'DE', 'germany': 'DE'})\n")
SENS = PD + "t = pd.read_csv('sensors.csv', parse_dates=['timestamp'])\n"
EMP = PD + "e = pd.read_csv('employees.csv', parse_dates=['hire_date'])\n"
AB = PD + "ab = pd.read_csv('ab_test.csv')\n"
REVENUE = "Revenue of an order in sales.csv is units * unit_price."
COUNTRY = ("In customers_raw.csv, drop exact duplicate rows and normalise country spellings to "
           "'US', 'UK' and 'DE' (e.g. 'usa' and 'United States' are 'US', 'Germany' is 'DE').")

TASKS: list[Task] = [
    # ---- cleaning -----------------------------------------------------------------
    Task("dedupe_count", "cleaning", "customers_raw.csv has exact duplicate rows. How many rows remain after "
         "dropping them? answer: an int.", CUST + "answer = len(c)"),
    Task("country_counts", "cleaning", f"{COUNTRY} answer: a dict country -> number of customers.",
         CUST + "answer = c['country'].value_counts().to_dict()"),
    Task("clean_names", "cleaning", "In customers_raw.csv (duplicates dropped), strip surrounding whitespace "
         "from names and title-case them (e.g. 'ada LOVELACE ' -> 'Ada Lovelace'). answer: the sorted list "
         "of distinct cleaned names.",
         CUST + "answer = sorted(c['name'].str.strip().str.title().unique())"),
    Task("missing_email", "cleaning", "How many customers in customers_raw.csv (duplicates dropped) have no "
         "email? answer: an int.", CUST + "answer = int(c['email'].isna().sum())"),
    Task("missing_temperature", "cleaning", "What fraction of the temperature readings in sensors.csv are "
         "missing? answer: a float between 0 and 1.", SENS + "answer = t['temperature'].isna().mean()"),
    Task("ffill_mean", "cleaning", "In sensors.csv, sort by timestamp and forward-fill missing temperatures "
         "within each sensor (a sensor's first reading is never missing-filled from another). answer: the "
         "mean temperature of sensor S2 after filling, a float.",
         SENS + "t = t.sort_values('timestamp')\nt['temperature'] = t.groupby('sensor')['temperature'].ffill()\n"
         "answer = t.loc[t['sensor'] == 'S2', 'temperature'].mean()"),
    # ---- group-bys ----------------------------------------------------------------
    Task("revenue_by_region", "groupby", f"{REVENUE} answer: a dict region -> total revenue (float).",
         SALES + "answer = s.groupby('region')['revenue'].sum().to_dict()"),
    Task("top_product_units", "groupby", "Which product sold the most units in total in sales.csv? "
         "answer: the product name, a str.", PD + "s = pd.read_csv('sales.csv')\n"
         "answer = s.groupby('product')['units'].sum().idxmax()"),
    Task("mean_units_by_product", "groupby", "Mean units per order for each product in sales.csv. answer: a "
         "dict product -> mean units (float).", PD + "s = pd.read_csv('sales.csv')\n"
         "answer = s.groupby('product')['units'].mean().to_dict()"),
    Task("busiest_customer", "groupby", "Which customer_id placed the most orders in sales.csv? On a tie take "
         "the smallest id. answer: an int.", PD + "s = pd.read_csv('sales.csv')\nn = s['customer_id']"
         ".value_counts()\nanswer = int(min(n[n == n.max()].index))"),
    Task("units_pivot", "groupby", "Total units per region and product in sales.csv. answer: a nested dict "
         "region -> {product -> total units}, every product present under every region (0 when none).",
         PD + "s = pd.read_csv('sales.csv')\np = s.pivot_table(index='region', columns='product', "
         "values='units', aggfunc='sum', fill_value=0)\nanswer = {r: p.loc[r].to_dict() for r in p.index}"),
    Task("median_price", "groupby", "Median unit_price per product in sales.csv. answer: a dict product -> "
         "median (float).", PD + "answer = pd.read_csv('sales.csv').groupby('product')['unit_price']"
         ".median().to_dict()"),
    Task("dept_headcount", "groupby", "Headcount per dept in employees.csv. answer: a dict dept -> int.",
         EMP + "answer = e['dept'].value_counts().to_dict()"),
    Task("dept_salary_spread", "groupby", "For each dept in employees.csv, the highest salary minus the "
         "lowest. answer: a dict dept -> float.",
         EMP + "g = e.groupby('dept')['salary']\nanswer = (g.max() - g.min()).to_dict()"),
    # ---- joins --------------------------------------------------------------------
    Task("revenue_by_segment", "join", f"{REVENUE} Join sales.csv with customers_raw.csv (drop duplicate "
         "customer rows first) on customer_id. answer: a dict segment -> total revenue (float).",
         SALES + CUST.replace(PD, "") + "answer = s.merge(c, on='customer_id').groupby('segment')['revenue']"
         ".sum().to_dict()"),
    Task("customers_without_orders", "join", "How many customers in customers_raw.csv (duplicates dropped) "
         "have no order in sales.csv? answer: an int.",
         CUST + "s = pd.read_csv('sales.csv')\nanswer = int((~c['customer_id'].isin(s['customer_id'])).sum())"),
    Task("paid_more_than_manager", "join", "In employees.csv manager_id refers to emp_id. How many employees "
         "earn a higher salary than their manager? answer: an int.",
         EMP + "m = e.merge(e, left_on='manager_id', right_on='emp_id', suffixes=('', '_mgr'))\n"
         "answer = int((m['salary'] > m['salary_mgr']).sum())"),
    Task("revenue_by_country", "join", f"{REVENUE} {COUNTRY} Then join with sales.csv on customer_id. "
         "answer: a dict country -> total revenue (float).",
         SALES + CUST.replace(PD, "") + "answer = s.merge(c, on='customer_id').groupby('country')['revenue']"
         ".sum().to_dict()"),
    # ---- dates --------------------------------------------------------------------
    Task("monthly_revenue", "dates", f"{REVENUE} Total revenue per month. answer: a dict 'YYYY-MM' -> "
         "revenue (float).", SALES + "answer = s.groupby(s['date'].str[:7])['revenue'].sum().to_dict()"),
    Task("busiest_weekday", "dates", "On which weekday were the most orders placed in sales.csv? answer: "
         "the English weekday name, e.g. 'Monday'.",
         PD + "s = pd.read_csv('sales.csv', parse_dates=['date'])\n"
         "answer = s['date'].dt.day_name().value_counts().idxmax()"),
    Task("q4_share", "dates", f"{REVENUE} What share of 2024's revenue came in Q4 (October-December)? "
         "answer: a float between 0 and 1.",
         SALES + "q = pd.to_datetime(s['date']).dt.quarter\n"
         "answer = s.loc[q == 4, 'revenue'].sum() / s['revenue'].sum()"),
    Task("longest_customer_span", "dates", "For each customer in sales.csv, the days between their first "
         "and last order. answer: the largest such number of days, an int.",
         PD + "s = pd.read_csv('sales.csv', parse_dates=['date'])\ng = s.groupby('customer_id')['date']\n"
         "answer = int((g.max() - g.min()).dt.days.max())"),
    Task("hottest_day_s1", "dates", "For sensor S1 in sensors.csv, which calendar day has the highest mean "
         "temperature (missing readings ignored)? answer: the date as a 'YYYY-MM-DD' str.",
         SENS + "d = t[t['sensor'] == 'S1'].groupby(t['timestamp'].dt.date)['temperature'].mean()\n"
         "answer = str(d.idxmax())"),
    Task("mean_tenure", "dates", "Mean tenure of the employees in employees.csv on 2025-01-01, in years "
         "(days / 365.25). answer: a float.",
         EMP + "answer = ((pd.Timestamp('2025-01-01') - e['hire_date']).dt.days / 365.25).mean()"),
    # ---- statistics ---------------------------------------------------------------
    Task("price_std", "stats", "Sample standard deviation (ddof=1) of unit_price in sales.csv. answer: a float.",
         PD + "answer = pd.read_csv('sales.csv')['unit_price'].std()"),
    Task("temp_humidity_corr", "stats", "Pearson correlation between temperature and humidity in sensors.csv, "
         "over rows where both are present. answer: a float.",
         SENS + "answer = t['temperature'].corr(t['humidity'])"),
    Task("conversion_rates", "stats", "Conversion rate (mean of converted) per group in ab_test.csv. answer: "
         "a dict group -> float.", AB + "answer = ab.groupby('group')['converted'].mean().to_dict()"),
    Task("units_p90", "stats", "The 90th percentile of units in sales.csv (linear interpolation). answer: a "
         "float.", PD + "answer = pd.read_csv('sales.csv')['units'].quantile(0.9)"),
    Task("revenue_outliers", "stats", f"{REVENUE} How many orders have a revenue z-score above 3 in absolute "
         "value (population standard deviation, ddof=0)? answer: an int.",
         SALES + "z = (s['revenue'] - s['revenue'].mean()) / s['revenue'].std(ddof=0)\n"
         "answer = int((z.abs() > 3).sum())"),
    Task("salary_age_slope", "stats", "Least-squares line salary = a * age + b over employees.csv. answer: "
         "the slope a, a float.",
         EMP + "import numpy as np\nanswer = float(np.polyfit(e['age'], e['salary'], 1)[0])"),
    # ---- needs a package import ---------------------------------------------------
    Task("welch_ttest", "import", "Welch's t-test (scipy.stats.ttest_ind with equal_var=False) of revenue, "
         "treatment against control, in ab_test.csv. answer: the two-sided p-value, a float.",
         AB + "from scipy import stats\nanswer = float(stats.ttest_ind(ab.loc[ab['group'] == 'treatment', "
         "'revenue'], ab.loc[ab['group'] == 'control', 'revenue'], equal_var=False).pvalue)"),
    Task("chi2_conversion", "import", "Chi-square test of independence between group and converted in "
         "ab_test.csv, with scipy.stats.chi2_contingency's defaults. answer: the p-value, a float.",
         AB + "from scipy import stats\n"
         "answer = float(stats.chi2_contingency(pd.crosstab(ab['group'], ab['converted']))[1])"),
    Task("file_digest", "import", "The SHA-256 hex digest of the raw bytes of sales.csv. answer: a str.",
         "import hashlib\nanswer = hashlib.sha256(open('sales.csv', 'rb').read()).hexdigest()"),
    Task("distinct_segments", "import", "The set of distinct segment values in customers_raw.csv. answer: a "
         "set of str.", CUST + "answer = set(c['segment'])", same_set),
    # ---- plotting -----------------------------------------------------------------
    Task("bar_revenue_region", "plot", f"{REVENUE} Draw a bar chart of total revenue per region with "
         "matplotlib. answer: the matplotlib Figure.",
         SALES + "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
         "r = s.groupby('region')['revenue'].sum()\nax.bar(r.index, r.values)\nanswer = fig", bars_match),
    Task("line_monthly_revenue", "plot", f"{REVENUE} Plot total revenue per month of 2024 as a line, months "
         "in order, with matplotlib. answer: the matplotlib Figure.",
         SALES + "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
         "m = s.groupby(s['date'].str[:7])['revenue'].sum().sort_index()\nax.plot(m.index, m.values)\n"
         "answer = fig", line_matches),
    Task("hist_price", "plot", "Draw a histogram of unit_price in sales.csv with exactly 20 bins, with "
         "matplotlib. answer: the matplotlib Figure.",
         PD + "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
         "ax.hist(pd.read_csv('sales.csv')['unit_price'], bins=20)\nanswer = fig", bar_count(20)),
]
