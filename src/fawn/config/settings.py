"""Typed settings: the whole of ``config.yaml`` as pydantic models.

Everything here is plain data. Loading (file discovery, ``$VAR`` expansion) lives in
:mod:`fawn.config.loader`; nothing is read at import time and nothing is global.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerSettings(_Section):
    """Where the gateway listens and what its edge accepts (see ``fawn.gateway.edge``)."""

    host: str = "127.0.0.1"
    port: int = Field(default=2026, ge=0, le=65535)
    #: browser origins (``scheme://host[:port]``) allowed to call the API cross-site
    cors_origins: list[str] = Field(default_factory=list)
    #: ``Host`` names served besides the loopback names and ``host`` (``*.example.com``, ``*``)
    allowed_hosts: list[str] = Field(default_factory=list)
    #: largest request body (JSON) in bytes; uploads have their own limits (``uploads``)
    max_body_bytes: int = Field(default=10 * 1024 * 1024, ge=1024)
    #: deepest nesting of objects/arrays in a JSON body; at most 200 so that any accepted
    #: value still encodes inside a stored record (the encoder stops at 255 levels)
    max_json_depth: int = Field(default=64, ge=8, le=200)


class DatabaseSettings(_Section):
    """``url`` unset means SQLite files in the data directory.

    A PostgreSQL URL (``postgresql://user@host:5432/db``) moves the thread/run records and the
    LangGraph checkpoints to that server.
    """

    url: str | None = None
    pool_size: int = Field(default=10, ge=1)

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is None:
            return None
        scheme = value.split("://", 1)[0].split("+", 1)[0]
        if scheme not in ("sqlite", "postgresql", "postgres"):
            raise ValueError(f"database.url must be sqlite:// or postgresql://, got {scheme}://")
        return value


class StreamSettings(_Section):
    backend: Literal["memory", "redis"] = "memory"
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_prefix: str = "fawn"
    retention_events: int = Field(default=10_000, ge=1)
    heartbeat_seconds: float = Field(default=15.0, gt=0)
    cleanup_delay_seconds: float = Field(default=300.0, ge=0)
    #: how long a finishing run keeps trying to deliver its last events (``end``) while the
    #: backend is unreachable; followers read the ending from the run record after that
    publish_retry_seconds: float = Field(default=30.0, ge=0)


class SandboxLimits(_Section):
    """What one sandboxed command may use (see README, "Security model")."""

    memory_mib: int = Field(default=2048, ge=16)  # address space per process (RLIMIT_AS)
    processes: int = Field(default=256, ge=4)  # processes per command (RLIMIT_NPROC)
    cpu_seconds: int = Field(default=300, ge=1)  # CPU time per process (RLIMIT_CPU)
    file_size_mib: int = Field(default=1024, ge=1)  # largest file written (RLIMIT_FSIZE)
    open_files: int = Field(default=1024, ge=64)  # descriptors per process (RLIMIT_NOFILE)
    tmp_mib: int = Field(default=256, ge=1)  # size of /tmp and of /dev/shm (tmpfs, RAM)
    disk_quota_mib: int = Field(default=4096, ge=1)  # a thread's files, all mounts together
    max_concurrent: int = Field(default=8, ge=1)  # commands running at once, server-wide


class SandboxSettings(_Section):
    allow_host_bash: bool = False
    allow_network: bool = False
    timeout_seconds: float = Field(default=120.0, gt=0)
    max_output_chars: int = Field(default=20_000, ge=200)
    skills_dir: Path | None = None
    bwrap_path: str = "bwrap"
    # The host uid and gid sandboxed commands run as when the server runs as root (the
    # kernel neither limits processes nor separates keyrings for uid 0). Reserve it: no
    # other account or file on the host should use it.
    run_as_uid: int = Field(default=64_000, ge=1, lt=2**32 - 1)
    limits: SandboxLimits = SandboxLimits()


class ModelSettings(BaseModel):
    """One entry of ``models:``, compatible with DeerFlow's config.

    Keys not declared here are passed through to the model class's constructor.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    display_name: str | None = None
    use: str = Field(description="import path 'module:Class', e.g. langchain_openai:ChatOpenAI")
    model: str
    api_key: str | None = None
    base_url: str | None = None
    api_base: str | None = None
    supports_thinking: bool = False
    supports_vision: bool = False
    supports_reasoning_effort: bool = False
    when_thinking_enabled: dict[str, Any] | None = None
    description: str | None = None

    @field_validator("use")
    @classmethod
    def _module_colon_class(cls, value: str) -> str:
        module, sep, attr = value.partition(":")
        if not sep or not module or not attr:
            raise ValueError(f"'use' must look like 'module:Class', got {value!r}")
        return value

    def extra_kwargs(self) -> dict[str, Any]:
        """The pass-through keys (those not declared on this model)."""
        return dict(self.model_extra or {})


class TitleSettings(_Section):
    enabled: bool = True
    max_words: int = Field(default=8, ge=1)
    max_chars: int = Field(default=80, ge=8)
    model_name: str | None = None
    prompt_template: str = (
        "Generate a concise title (at most {max_words} words) for this conversation. "
        "Answer with the title only.\nUser: {user_msg}\nAssistant: {assistant_msg}"
    )


class SummarizationSettings(_Section):
    enabled: bool = False
    model_name: str | None = None
    trigger_tokens: int = Field(default=60_000, ge=1000)
    keep_messages: int = Field(default=20, ge=1)


class AgentSettings(_Section):
    model_retries: int = Field(default=2, ge=0)
    loop_warn_after: int = Field(default=3, ge=2)
    loop_stop_after: int = Field(default=5, ge=2)
    recursion_limit: int = Field(default=100, ge=5)

    @model_validator(mode="after")
    def _stop_after_warn(self) -> AgentSettings:
        if self.loop_stop_after <= self.loop_warn_after:
            raise ValueError("agent.loop_stop_after must be greater than agent.loop_warn_after")
        return self


#: The built-in sub-agent types; a custom type may not take one of these names.
BUILTIN_SUBAGENT_TYPES: tuple[str, ...] = ("general-purpose", "bash")


class SubagentTypeSettings(_Section):
    """A custom sub-agent type (``subagents.custom_agents``): its prompt and tool allowlist."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,39}$")
    description: str = Field(min_length=1)
    system_prompt: str = Field(min_length=1)
    #: the tools it may use (a subset of the lead's, never ``task``); unset: general-purpose's
    tools: list[str] | None = None
    #: unset: the run's model
    model_name: str | None = None
    max_turns: int | None = Field(default=None, ge=1)
    timeout_seconds: float | None = Field(default=None, gt=0)


class SubagentSettings(_Section):
    """Sub-agents started with the ``task`` tool (runs with ``subagent_enabled=true``)."""

    #: the ceiling for a run's ``max_concurrent_subagents`` (a request cannot widen it)
    max_concurrent: int = Field(default=3, ge=1, le=4)
    max_total_per_run: int = Field(default=6, ge=1, le=50)
    timeout_seconds: float = Field(default=900.0, gt=0)
    #: model calls a sub-agent may make before it must answer
    max_turns: int = Field(default=50, ge=1, le=500)
    custom_agents: list[SubagentTypeSettings] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self) -> SubagentSettings:
        seen: set[str] = set(BUILTIN_SUBAGENT_TYPES)
        for agent in self.custom_agents:
            if agent.name in seen:
                raise ValueError(
                    f"subagents.custom_agents: the name {agent.name!r} is taken "
                    f"(built-in types: {', '.join(BUILTIN_SUBAGENT_TYPES)})"
                )
            seen.add(agent.name)
        return self


class ControlSettings(_Section):
    """The agent loop's controls (each one a middleware)."""

    #: a tool result longer than this is saved to a file and the model gets an excerpt
    tool_output_max_chars: int = Field(default=20_000, ge=1000)
    #: characters of the head and of the tail the excerpt keeps
    tool_output_excerpt_chars: int = Field(default=2_000, ge=100)
    #: refuse write_file/str_replace on an existing file not read in its current version
    read_before_write: bool = True
    #: tokens (prompt + completion, sub-agents included) a run may use; unset: no cap
    max_run_tokens: int | None = Field(default=None, ge=1)
    #: share of ``max_run_tokens`` after which the model is told to wrap up
    token_warn_fraction: float = Field(default=0.8, gt=0, lt=1)
    #: the current date as a system reminder each turn
    dynamic_context: bool = True

    @model_validator(mode="after")
    def _excerpt_fits(self) -> ControlSettings:
        if 2 * self.tool_output_excerpt_chars >= self.tool_output_max_chars:
            raise ValueError(
                "controls.tool_output_excerpt_chars must be less than half of "
                "controls.tool_output_max_chars"
            )
        return self


class UploadSettings(_Section):
    max_files: int = Field(default=20, ge=1)
    max_file_bytes: int = Field(default=50 * 1024 * 1024, ge=1)


class RunSettings(_Section):
    """The run lifecycle: concurrency, ownership across workers, notifications, drain.

    A worker renews its heartbeat every ``renew_seconds``. A peer declares it dead when it has
    watched that heartbeat stand still for ``lease_seconds`` while the peer itself reached the
    database (an outage everyone shares kills nothing). A worker that cannot renew for
    ``outage_tolerance_seconds`` stops its runs itself, so it is never still running when a
    peer takes over: ``lease_seconds`` must exceed the tolerance plus one renewal and one sweep.
    """

    max_concurrent: int = Field(default=16, ge=1)
    renew_seconds: float = Field(default=5.0, gt=0)
    lease_seconds: float = Field(default=90.0, gt=0)
    outage_tolerance_seconds: float = Field(default=60.0, gt=0)
    sweep_seconds: float = Field(default=10.0, gt=0)
    poll_seconds: float = Field(default=5.0, gt=0)
    drain_seconds: float = Field(default=30.0, ge=0)
    stop_wait_seconds: float = Field(default=10.0, ge=0)

    @model_validator(mode="after")
    def _lease_outlasts_tolerance(self) -> RunSettings:
        floor = self.outage_tolerance_seconds + self.renew_seconds + self.sweep_seconds
        if self.lease_seconds <= floor:
            raise ValueError(
                f"runs.lease_seconds ({self.lease_seconds:g}) must exceed "
                "runs.outage_tolerance_seconds + runs.renew_seconds + runs.sweep_seconds "
                f"({floor:g}): a worker cut off from the database must stop its runs before "
                "a peer may declare it dead"
            )
        return self


#: how a thread's checkpoints keep its messages (``checkpoints.mode``)
CheckpointMode = Literal["full", "delta"]


class CheckpointSettings(_Section):
    """How the graph's checkpoints are written (``fawn.store.checkpoints``)."""

    #: when a run's steps become durable (LangGraph's ``durability``), unless the run asks:
    #: ``sync`` (each step is written before the next starts), ``async`` (written while the
    #: next step runs: a crash may lose the last step), ``exit`` (only when the run ends: a
    #: crash loses the whole run's progress, and nothing of it is visible until it ends).
    #: README "Checkpoint durability" says why the default is ``async``.
    durability: Literal["sync", "async", "exit"] = "async"
    #: how a checkpoint keeps the conversation: ``full`` (LangGraph's shape: every checkpoint
    #: holds the whole ``messages`` list, so a turn's storage grows with the thread) or
    #: ``delta`` (a checkpoint holds only the messages its step wrote; reads replay them from
    #: the nearest keyframe). A thread keeps the mode it was created in: a server in the
    #: other mode refuses it (409). README "Checkpoint modes".
    mode: CheckpointMode = "full"
    #: in ``delta`` mode, every this many updates of ``messages`` a checkpoint holds the
    #: whole list again (a keyframe): a read replays at most this many steps' writes
    keyframe_every: int = Field(default=100, ge=1)


class EvidenceSettings(_Section):
    """What a run leaves as evidence of its file work (``fawn.evidence``): snapshots of the
    thread's ``workspace/`` and ``outputs/`` before and after it, the changes between them,
    and the delivery receipt. Rollback restores files from the pre-run snapshot."""

    #: snapshot the files of every run (off: no changes, no delivery check, rollback
    #: restores the conversation only)
    enabled: bool = True
    #: directory names never snapshotted, at any depth (caches, build output); fawn's own
    #: tool-output cache (``workspace/.fawn``) is always skipped
    exclude: list[str] = Field(
        default_factory=lambda: [
            ".git",
            "node_modules",
            ".venv",
            "__pycache__",
            ".cache",
            "build",
            "dist",
            "target",
        ]
    )
    #: snapshots of this many latest runs per thread are kept (older ones are pruned, and
    #: the content only they refer to)
    keep_runs: int = Field(default=20, ge=1)
    #: files larger than this are recorded by size and timestamps only, not stored: their
    #: changes are listed, but a rollback cannot restore them (README)
    max_file_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    #: learn from inotify which directories changed, so a snapshot lists only those (off:
    #: every snapshot stats every file; README "Workspace evidence" says what each sees)
    watch: bool = True
    #: a run that creates or modifies a file under outputs/ without presenting it ends
    #: ``error`` (stop reason ``delivery_incomplete``)
    require_delivery: bool = True
    #: files larger than this get no text diff (metadata only)
    diff_max_file_bytes: int = Field(default=256 * 1024, ge=0)
    #: one file's diff is cut at this many characters
    diff_max_chars: int = Field(default=64 * 1024, ge=0)
    #: all diffs of one run together are cut at this many characters
    diff_total_chars: int = Field(default=1024 * 1024, ge=0)

    @field_validator("exclude")
    @classmethod
    def _plain_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name or "/" in name or name in (".", ".."):
                raise ValueError(f"{name!r} is not a directory name")
        return value


class LoginRateLimitSettings(_Section):
    """Failed sign-ins allowed per client address before it is locked out for a while."""

    max_failures: int = Field(default=5, ge=1)
    window_seconds: float = Field(default=300.0, gt=0)


class PasswordSettings(_Section):
    """Password rules and the Argon2id cost (see :mod:`fawn.gateway.auth.passwords`)."""

    min_length: int = Field(default=8, ge=6, le=128)
    argon2_time_cost: int = Field(default=3, ge=1, le=20)
    argon2_memory_kib: int = Field(default=65_536, ge=1024, le=4 * 1024 * 1024)
    argon2_parallelism: int = Field(default=1, ge=1, le=16)


class OIDCProviderSettings(_Section):
    """One OpenID Connect identity provider (authorization code flow with PKCE)."""

    issuer: str
    client_id: str
    client_secret: str | None = None
    display_name: str | None = None
    scopes: list[str] = Field(default_factory=lambda: ["openid", "email", "profile"])
    #: where the provider sends the browser back; default <this server>/api/v1/auth/callback/<id>
    redirect_uri: str | None = None
    token_endpoint_auth: Literal["client_secret_basic", "client_secret_post", "none"] = (
        "client_secret_basic"
    )
    #: sign-in is refused for other domains when the list is not empty
    allowed_email_domains: list[str] = Field(default_factory=list)
    #: these addresses get the admin role when their account is created
    admin_emails: list[str] = Field(default_factory=list)
    require_verified_email: bool = True
    #: create an account on first sign-in (else only existing accounts may sign in)
    auto_create_users: bool = True

    @field_validator("issuer")
    @classmethod
    def _http_issuer(cls, value: str) -> str:
        if not value.startswith(("https://", "http://")):
            raise ValueError(f"issuer must be an http(s) URL, got {value!r}")
        return value.rstrip("/")


class OIDCSettings(_Section):
    providers: dict[str, OIDCProviderSettings] = Field(default_factory=dict)
    #: after sign-in the browser goes here with ?next=<path> (DeerFlow's web app:
    #: http://host:3000/auth/callback); unset: straight to <next>
    frontend_callback: str | None = None
    state_seconds: float = Field(default=300.0, gt=0, le=3600)
    http_timeout_seconds: float = Field(default=10.0, gt=0)

    @field_validator("providers")
    @classmethod
    def _provider_ids(
        cls, value: dict[str, OIDCProviderSettings]
    ) -> dict[str, OIDCProviderSettings]:
        for key in value:
            if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", key):
                raise ValueError(f"provider id {key!r}: use 1-64 of A-Z a-z 0-9 _ -")
        return value


class CustomAuthSettings(_Section):
    """A ``langgraph_sdk.Auth`` object, loaded like ``langgraph.json``'s ``auth.path``."""

    #: ``./auth.py:auth`` (a file, relative to the config file) or ``package.module:auth``
    path: str
    #: users whose permissions include this one may read and write every owner's threads
    admin_permission: str | None = None

    @field_validator("path")
    @classmethod
    def _file_or_module_colon_name(cls, value: str) -> str:
        target, sep, name = value.rpartition(":")
        if not sep or not target or not name.isidentifier():
            raise ValueError(
                f"path must look like './auth.py:auth' or 'module:auth', got {value!r}"
            )
        return value


class RolePolicy(_Section):
    """What one role may use. ``"*"`` allows everything (the default)."""

    #: model names (from ``models[].name``) runs may use
    models: list[str] = Field(default_factory=lambda: ["*"])
    #: tool names the agent may show the model and run
    tools: list[str] = Field(default_factory=lambda: ["*"])

    def allows_model(self, name: str) -> bool:
        return "*" in self.models or name in self.models

    def allowed_tools(self) -> frozenset[str] | None:
        """The tools this role may use, or None for all of them."""
        return None if "*" in self.tools else frozenset(self.tools)


class PolicySettings(_Section):
    """Which models and tools each role may use: checked when a run is admitted, and again
    inside the agent (a tool outside the policy is neither shown to the model nor run)."""

    admin: RolePolicy = RolePolicy()
    user: RolePolicy = RolePolicy()

    def for_role(self, role: str) -> RolePolicy:
        return self.admin if role == "admin" else self.user


class AuthSettings(_Section):
    """Who may call the API (see the README's "Users and authentication")."""

    mode: Literal["none", "local", "oidc", "custom"] = "none"
    #: mode none serves only loopback unless this is set
    allow_remote_without_auth: bool = False
    #: signs session tokens; unset: generated once and kept in <data_dir>/auth_secret (0600)
    secret: str | None = Field(default=None, min_length=32)
    session_days: float = Field(default=7.0, gt=0, le=365)
    cookie_secure: Literal["auto", "always", "never"] = "auto"
    #: self sign-up through /api/v1/auth/register (unset: on in local mode, off in oidc mode)
    registration: bool | None = None
    #: a revoked session, key or password change takes effect within this many seconds
    revocation_seconds: float = Field(default=1.0, ge=0, le=60)
    #: proxies (addresses or CIDRs) whose X-Real-IP names the client, for the login limit
    trusted_proxies: list[str] = Field(default_factory=list)
    #: shares the login limit between workers; unset: streams.redis_url when
    #: streams.backend is redis, else counted in each process
    redis_url: str | None = None
    login_rate_limit: LoginRateLimitSettings = LoginRateLimitSettings()
    password: PasswordSettings = PasswordSettings()
    oidc: OIDCSettings = OIDCSettings()
    custom: CustomAuthSettings | None = None
    policy: PolicySettings = PolicySettings()

    @model_validator(mode="after")
    def _mode_needs(self) -> AuthSettings:
        if self.mode == "custom" and self.custom is None:
            raise ValueError("auth.mode custom needs auth.custom.path (module:Auth object)")
        if self.mode == "oidc" and not self.oidc.providers:
            raise ValueError("auth.mode oidc needs at least one auth.oidc.providers entry")
        for net in self.trusted_proxies:
            try:
                ipaddress.ip_network(net, strict=False)
            except ValueError:
                raise ValueError(
                    f"auth.trusted_proxies: {net!r} is not an address or CIDR"
                ) from None
        return self

    @property
    def enabled(self) -> bool:
        return self.mode != "none"

    @property
    def registration_open(self) -> bool:
        if self.registration is not None:
            return self.registration
        return self.mode == "local"


class AppConfig(_Section):
    """The whole configuration. Unknown top-level sections are an error."""

    data_dir: Path = Path(".fawn")
    server: ServerSettings = ServerSettings()
    database: DatabaseSettings = DatabaseSettings()
    streams: StreamSettings = StreamSettings()
    sandbox: SandboxSettings = SandboxSettings()
    models: list[ModelSettings] = Field(default_factory=list)
    title: TitleSettings = TitleSettings()
    summarization: SummarizationSettings = SummarizationSettings()
    agent: AgentSettings = AgentSettings()
    subagents: SubagentSettings = SubagentSettings()
    controls: ControlSettings = ControlSettings()
    uploads: UploadSettings = UploadSettings()
    runs: RunSettings = RunSettings()
    evidence: EvidenceSettings = EvidenceSettings()
    checkpoints: CheckpointSettings = CheckpointSettings()
    auth: AuthSettings = AuthSettings()

    @model_validator(mode="after")
    def _unique_model_names(self) -> AppConfig:
        seen: set[str] = set()
        for model in self.models:
            if model.name in seen:
                raise ValueError(f"models: the name {model.name!r} is used twice")
            seen.add(model.name)
        return self

    @model_validator(mode="after")
    def _policy_names_models(self) -> AppConfig:
        known = {m.name for m in self.models}
        for role in ("admin", "user"):
            for name in self.auth.policy.for_role(role).models:
                if name != "*" and name not in known:
                    raise ValueError(
                        f"auth.policy.{role}.models: {name!r} is not a configured model "
                        f"(models: {', '.join(sorted(known)) or 'none'})"
                    )
        return self

    def model_by_name(self, name: str) -> ModelSettings | None:
        return next((m for m in self.models if m.name == name), None)

    @property
    def default_model(self) -> ModelSettings | None:
        return self.models[0] if self.models else None
