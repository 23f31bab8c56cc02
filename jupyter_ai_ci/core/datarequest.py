"""Which requests are about data: their answer must come from code that ran.

On a third party's benchmark a small model answered half of the questions about a
CSV file in words alone, inventing numbers in the requested format, and none of
those was right.  A request is about data when it names a data file, names a
variable the kernel holds, or asks for a number, a table or a test
("how many…", "the mean of…", "a t-test…").  A request that asks for an
explanation ("why…", "explain…", "what is a p-value?") is not, unless it asks for a number about
data it names ("why is the total of sales.csv so low?"): words are its answer.
The rule is kept simple so a user can predict it (docs/guide.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_DATA_FILE = re.compile(
    r"[\w./\\-]+\.(?:csv|tsv|txt|xlsx?|json|jsonl|parquet|feather|pkl|pickle|h5|hdf5|sqlite|db|dta|sav|orc|arrow)\b",
    re.I)
# Asking for a computed value: a count, a statistic, a table of them, a test.
_COMPUTE = re.compile(
    r"\b(?:how many|how much|number of|count|average|mean|median|mode|sum|total|maximum|minimum|max|min|"
    r"std|standard deviation|variance|percent(?:age)?|proportion|share|ratio|rate|correlat\w*|skew\w*|"
    r"kurtosis|quantile|percentile|p-?value|t-?test|chi-?square\w*|anova|regression|outliers?|top \d+|"
    r"distribution|table|group ?by|per (?:region|category|group|year|month|day)|calculate|compute|"
    r"most|least|highest|lowest|largest|smallest|rank\w*|trend)\b", re.I)
# Asking for words: an explanation of a concept or of a result.
_EXPLAIN = re.compile(r"^\s*(?:why\b|explain\b|describe\b|what (?:is|are) (?:a|an)\b|"
                      r"how (?:does|do|should|would|can) (?:a|an|i|you|one)\b|define\b|tell me about\b)", re.I)


def about_data(request: str, named: Sequence[str] = ()) -> bool:
    """True when ``request`` needs code that ran; ``named``: the kernel variables it names."""
    computes = bool(_COMPUTE.search(request))
    if _EXPLAIN.search(request):
        # "explain the columns of df" is answered in words; "why is the total of sales.csv so
        # low?" asks for a number about named data, which code must compute.
        return computes and bool(_DATA_FILE.search(request) or named)
    return computes or bool(_DATA_FILE.search(request) or named)
