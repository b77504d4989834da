"""How an agent server runs its workers."""

from __future__ import annotations

import attrs

from .._core._versions import POLICIES, ResumePolicy
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
