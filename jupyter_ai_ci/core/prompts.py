"""Prompt texts, as constants.  Kept here so wording changes are one diff."""

SYSTEM = """\
You are a code interpreter inside a live Jupyter notebook. You write Python that \
is executed at once in the user's running kernel, where their variables already \
exist (see the notebook context).

Rules:
- Put code to run in fenced ```python blocks. Every python block is run, in order, \
each as its own notebook cell. Keep each block small and focused.
- Start the code with the imports it uses (import pandas as pd, …), even when a \
library is loaded already.
- Use the variables the context lists; they exist. Any other name, even one in a cell \
shown, may not: create what you need. Do not reload data that is already loaded.
- Use the exact file names and column names the context shows; never guess a name.
- Do every step the request asks for, in its order, and give the result in the form \
it asks for (a number, a dict, a list, a figure).
- Show results: end a block with an expression, print, or display a figure.
- Do not explain how to run the code; it is run for you. Keep prose short.
- If the request needs no code, answer in prose without a python block."""

REQUEST = """\
{context}
## Request
{request}"""

# The failed code itself is not repeated: it is the reply just above, and a small model shown
# its code again tends to send it back unchanged.  The error leads, and the last line asks for
# a change.
FIX = """\
{failed}
{output}
Traceback (library frames folded):
```
{traceback}
```
{notes}
Fix the cause of the error{same}: change the code, do not send it back as it was. Reply with \
the corrected, complete code for this step (every block again, not only the changed \
lines), in ```python blocks."""

FIX_OUTPUT = """
Output printed before the error:
```
{output}
```
"""

# The code ran, but its chart contradicts the request (core/chartcheck.py): no traceback to show,
# the sentence that says how, and what the chart shows (FIX_FIGURES).
CHART_FIX = """\
The code ran, but the chart it drew does not match the request: {mismatch}.
{figures}{notes}
Fix the code so that the chart matches the request{same}: change the code, do not send it back \
as it was. Reply with the corrected, complete code for this step (every block again, not only \
the changed lines), in ```python blocks."""

# What the figures a failed attempt drew show, in a fix request: a model that cannot see them
# reads them here (the pictures go beside, to a model that takes images).
FIX_FIGURES = """
The figures it drew show:
```
{figures}
```
"""

# The previous attempt raised the same error: the fix request says that change did not help.
SAME_ERROR = "; the previous change did not fix it, so try another way"

# The code ran, but pandas warned that a step changed a copy, not the DataFrame (core/noop.py):
# no traceback, pandas' warning with its advice instead.
NOOP_FIX = """\
The code ran, but pandas warned that a step changed nothing: {what}.
{output}
pandas' warning:
```
{warning}
```
{notes}
Fix the code so that the change is made on the DataFrame itself{same}: change the code, do not \
send it back as it was, and do not silence the warning. Reply with the corrected, complete code \
for this step (every block again, not only the changed lines), in ```python blocks."""

# A fix that sent back code which had already failed is not run (it would fail the same way):
# the model is asked once more, plainly.
REPEATED = """\
That is the code that already failed with {error}; running it again would fail the same way. \
Change the code so that it does not raise this error, and reply with the corrected, complete \
code in ```python blocks."""

# A fix asked anew from the start (LoopSettings.fix_from_start, or after a fix that was the failed
# code again): a small model copies what its own earlier replies say, so what failed is told in
# words (the line, not the code).
RESTART = """\
Note: an earlier attempt at this request failed with {error}, at the line `{line}`. Write the \
code another way, so that it does not raise this error.{hints}"""

# RESTART for a chart that contradicted the request (there is no line that failed).
CHART_RESTART = """\
Note: an earlier attempt at this request drew a chart that does not match it: {mismatch}. \
Write the code another way, so that the chart matches the request."""

# RESTART for code that pandas said changed a copy (the line is in the sentence, when it named one).
NOOP_RESTART = """\
Note: an earlier attempt at this request ran, but pandas warned that a step changed nothing: \
{what}. Write the code another way, so that the change is made on the DataFrame itself."""

# Parts of the fix request that appear only when the kernel had something to say.
FIX_HINTS = """
Hints:
{hints}
"""

FIX_VARIABLES = """
Variables the failed code used or set, as they were when it failed (its changes were undone since: \
the corrected code must create what it needs again):
```
{variables}
```
"""

SYNTAX_NOTE = "The code was not run: it does not parse."

NEXT_STEP = """\
The code ran without error. Its output:
```
{output}
```

Step {step} of at most {steps}. If the request is fully answered, reply with a \
short conclusion in prose and no python block. Otherwise write the next step's \
code in ```python blocks."""

ANSWER = """\
The code ran without error. Its output:
```
{output}
```

Now answer the request in words, from this output: one to three sentences that \
give the result with the numbers it shows. No code."""

# A question about data answered in prose, with no code: its numbers would be made up.
NEED_CODE = """\
That answer has no code, so nothing checked it. This request is about data: write Python \
in ```python blocks that computes the answer from the data and prints it. Do not state a \
result you have not computed."""

NO_OUTPUT = "(no output)"
