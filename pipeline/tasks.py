"""How a job's work was spread over Spark's tasks: how many, and the longest one's share.

Theory of operation
-------------------
Spark's driver keeps a status store (`AppStatusStore`, fed by its own
listener whether or not the web UI runs): every job with its job group and
stages, every stage with its tasks' summed run time and their quantiles.
`TaskWatch` sets a job group of its own around the work it watches, so
Spark jobs started in that block (the job's reads, rounds and write, not
reading the results back) carry it. `TaskWatch.spread` waits for the
listener bus to drain, then sums over the group's stages that ran:
`tasks` (tasks completed) and `longest_task_share`, the longest task's run
time over the sum of all of them (executor run time, in ms as Spark counts
it). 1.0 means one task did all the work; 1/N, N equal tasks.

The store is reached through the JVM gateway (`SparkContext._jsc`); a
session without it (Spark Connect) reports None for both.
"""

from __future__ import annotations

import itertools
from typing import Any

_groups = itertools.count(1)


class TaskWatch:
    """`with TaskWatch(spark, "linearize") as watch: ...`, then `watch.spread()`."""

    def __init__(self, spark, name: str) -> None:
        self.context = spark.sparkContext
        self.group = f"tanglenode-{name}-{next(_groups)}"

    def __enter__(self) -> TaskWatch:
        self.context.setJobGroup(self.group, self.group)
        return self

    def __exit__(self, *exc: object) -> None:
        self.context.setLocalProperty("spark.jobGroup.id", None)

    def spread(self) -> dict[str, Any]:
        """{"tasks", "longest_task_share"} of the group's stages (None where unknown)."""
        try:
            return self._spread()
        except Exception:  # no JVM gateway (Spark Connect) or another store: unknown
            return {"tasks": None, "longest_task_share": None}

    def _spread(self) -> dict[str, Any]:
        stages = self.stages()
        total = sum(stage["task_ms"] for stage in stages)
        longest = max((stage["longest_ms"] for stage in stages), default=0.0)
        share = round(longest / total, 3) if total > 0 else None
        return {"tasks": sum(stage["tasks"] for stage in stages), "longest_task_share": share}

    def stages(self) -> list[dict[str, Any]]:
        """Each stage of the group that ran, in order: {"stage", "tasks", "task_ms" (their
        summed run time), "longest_ms", "wall_ms" (submitted to completed)}."""
        gateway = self.context._gateway
        context = self.context._jsc.sc()
        context.listenerBus().waitUntilEmpty()
        status = context.statusStore()
        ids = set()
        jobs = status.jobsList(None).iterator()
        while jobs.hasNext():
            job = jobs.next()
            group = job.jobGroup()
            if group.isDefined() and group.get() == self.group:
                stage_ids = job.stageIds().iterator()
                while stage_ids.hasNext():
                    ids.add(stage_ids.next())
        highest = gateway.new_array(gateway.jvm.double, 1)
        highest[0] = 1.0  # the quantile 1.0 is the longest task
        found = []
        for stage_id in sorted(ids):
            stage = status.lastStageAttempt(stage_id)
            if stage.numCompleteTasks() == 0:  # skipped: its output was reused
                continue
            summary = status.taskSummary(stage_id, stage.attemptId(), highest)
            longest = summary.get().executorRunTime().apply(0) if summary.isDefined() else 0.0
            submitted, completed = stage.submissionTime(), stage.completionTime()
            wall = None
            if submitted.isDefined() and completed.isDefined():
                wall = completed.get().getTime() - submitted.get().getTime()
            found.append(
                {
                    "stage": stage_id,
                    "tasks": stage.numCompleteTasks(),
                    "task_ms": float(stage.executorRunTime()),
                    "longest_ms": float(longest),
                    "wall_ms": wall,
                }
            )
        return found
