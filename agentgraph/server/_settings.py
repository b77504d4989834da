"""How an agent server runs its workers."""

from __future__ import annotations

import attrs

from .._core._versions import POLICIES, ResumePolicy
from ._flow import FlowLimits
from ._webhook_settings import WebhookSettings

__all__ = ("ServerSettings",)


def _positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 1:
        raise ValueError(f"{attribute.name} is at least 1, not {value}")


@attrs.frozen(kw_only=True)
class ServerSettings:
    """The worker pool of an agent server.

    Args:
        workers: worker threads started with the API (0: the API alone). Default 1.
        concurrency: runs each worker runs at once. Default 10.
        run_timeout: seconds a run may take before it ends `timeout`; None (the
            default) for no limit.
        grace: seconds a stopping worker lets its runs finish before leaving
            them to another worker. Default 30.
        api_key: when set, every request but `/ok` must carry it in `x-api-key`.
        resume_policy: what resuming a run of another graph version does, for
            runs whose assistant names no policy (its config's
            `configurable.resume_policy`): `"pinned"`, `"latest"` or `"refuse"`
            (see `GraphVersions`). None (the default): the runner's
            `GraphVersions`' policy, else `"latest"`.
        webhooks: where runs' webhooks may go and how they are signed and retried;
            by default from the environment (`AGENTGRAPH_WEBHOOK_SECRET`,
            `AGENTGRAPH_WEBHOOK_ALLOW_LOOPBACK`).
        limits: how many runs of an assistant, or of a caller key, the workers
            run at once and start per window (default: no limit).
        priority: a `langgraph_sdk.Priority` (or its `@priority.assign`
            function) that assigns a thread's priority at its first run;
            None (the default): a run's priority is its own, else 0.
        auth: authorization hooks: a `langgraph_sdk.Auth` object, whose
            `authenticate` function runs on every request but `/ok` and whose
            `@auth.on` handlers allow, refuse or filter each action on each
            resource (see the guide "Agent server authorization"). None (the
            default): every caller may do everything.
        run_retention: seconds an ended run (its events and webhook deliveries with
            it) is kept; None (the default) keeps runs as long as their thread.
        sweep_every: seconds between each worker's sweeps of expired threads and
            old runs. Default 60.
    """

    workers: int = attrs.field(default=1)
    concurrency: int = attrs.field(default=10, validator=_positive)
    run_timeout: float | None = None
    grace: float = 30.0
    api_key: str | None = attrs.field(default=None, repr=False)
    resume_policy: ResumePolicy | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.in_(POLICIES))
    )
    webhooks: WebhookSettings = attrs.field(factory=WebhookSettings)
    limits: FlowLimits = attrs.field(factory=FlowLimits)
    priority: object | None = None
    auth: object | None = attrs.field(default=None, eq=False, repr=False)
    run_retention: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(0))
    )
    sweep_every: float = attrs.field(default=60.0, validator=attrs.validators.gt(0))
