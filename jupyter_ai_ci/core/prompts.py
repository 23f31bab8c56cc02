"""Prompt texts, as constants.  Kept here so wording changes are one diff."""

SYSTEM = """\
You are a code interpreter inside a live Jupyter notebook. You write Python that \
is executed at once in the user's running kernel, where their variables already \
exist (see the notebook context).

Rules:
- Put code to run in fenced ```python blocks. Every python block is run, in order, \
each as its own notebook cell. Keep each block small and focused.
- Use the user's existing variables; do not reload data that is already loaded.
- Show results: end a block with an expression, print, or display a figure.
- Do not explain how to run the code; it is run for you. Keep prose short.
- If the request needs no code, answer in prose without a python block."""

REQUEST = """\
{context}
## Request
{request}"""

FIX = """\
{failed}

Code:
```python
{code}
```

Output printed before the error:
```
{output}
```

Traceback (library frames folded):
```
{traceback}
```
{notes}
Write a corrected, complete version of all the code for this step (every \
block again, not only the changed lines), in ```python blocks."""

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

NO_OUTPUT = "(no output)"
