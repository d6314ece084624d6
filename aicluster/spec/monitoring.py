"""Monitoring in the stack file: where the cluster's Prometheus runs (aicluster/monitoring writes what it scrapes)."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, model_validator

from .base import Problem, Strict, _pattern, _Problems, did_you_mean

# ------------------------------------------------------------------------------------------------
# Alert routing (monitoring.alerts): receivers and routes, rendered as Alertmanager's configuration
# ------------------------------------------------------------------------------------------------

# A receiver's secret is NAMED, never given: the config key of the Pulumi secret that holds it (`pulumi config set
# --secret aicluster:slackWebhook`), as bmc_secret is. A value that does not fit is not echoed (it may be the secret).
ALERT_SECRET_RE = _pattern(
    r"^aicluster:[A-Za-z][-A-Za-z0-9_.]{0,127}$",
    "must be the config key of the Pulumi secret that holds it, aicluster: and a name (e.g. aicluster:slackWebhook, "
    "set with `pulumi config set --secret aicluster:slackWebhook`); what was given is not shown, in case it is the "
    "secret itself",
)
RECEIVER_NAME_RE = _pattern(
    r"^[a-z][a-z0-9-]{0,62}$", "must be a receiver name: lowercase letters, digits and '-' (e.g. oncall)"
)
EMAIL_RE = _pattern(
    r"^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$",
    "must be an e-mail address (e.g. gpu-oncall@example.com)",
)
SMARTHOST_RE = _pattern(
    r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?:[0-9]{1,5}$",
    "must be an SMTP server as host:port (e.g. smtp.example.com:587)",
)
# A webhook URL is not a secret in Alertmanager 0.25 (it has no url_file): refuse the forms that carry one.
WEBHOOK_URL_RE = _pattern(
    r"^https?://[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]{0,512})?$",
    "must be an http(s) URL with no user, password or query string, which Alertmanager 0.25 would keep in its "
    "configuration in clear (e.g. https://hooks.example.com/aicluster); give a token in token_secret",
)
SMTP_USER_RE = _pattern(
    r"^[A-Za-z0-9._@+-]{1,128}$",
    "must be an SMTP user name: letters, digits, '.', '_', '@', '+' and '-' (e.g. alertmanager)",
)
SLACK_CHANNEL_RE = _pattern(r"^[#@][a-z0-9._-]{1,80}$", "must be a Slack channel or user (e.g. #gpu-alerts)")
SNS_TOPIC_RE = _pattern(
    r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$",
    "must be an SNS topic ARN (e.g. arn:aws:sns:us-east-1:123456789012:gpu-alerts)",
)

AlertSecret = Annotated[str, Field(pattern=ALERT_SECRET_RE)]
ReceiverName = Annotated[str, Field(pattern=RECEIVER_NAME_RE)]
AlertSeverity = Literal["critical", "warning", "info"]
# the rule groups `aicluster monitoring` writes (rules/<group>.yml)
AlertGroup = Literal["gpu", "fabric", "filesystem", "slurm"]


class EmailReceiver(Strict):
    """Mail through an SMTP server; its password (if it needs one) read from a file the role writes."""

    kind: Literal["email"]
    name: Annotated[ReceiverName, Field(description="Receiver name the routes use (e.g. `ops-mail`).")]
    to: Annotated[
        list[Annotated[str, Field(pattern=EMAIL_RE)]],
        Field(min_length=1, max_length=32, description="Addresses to mail (e.g. `[gpu-oncall@example.com]`)."),
    ]
    sender: Annotated[str, Field(pattern=EMAIL_RE, description="The From address (e.g. `alertmanager@example.com`).")]
    smarthost: Annotated[
        str, Field(pattern=SMARTHOST_RE, description="SMTP server, host:port (e.g. `smtp.example.com:587`).")
    ]
    username: Annotated[
        str | None,
        Field(pattern=SMTP_USER_RE, description="SMTP user name, not secret (e.g. `alertmanager`)."),
    ] = None
    password_secret: Annotated[
        AlertSecret | None,
        Field(description="Config key of the Pulumi secret with the SMTP password (e.g. `aicluster:smtpPassword`)."),
    ] = None
    require_tls: Annotated[
        bool, Field(description="Refuse an SMTP server without STARTTLS (Alertmanager's default).")
    ] = True

    @model_validator(mode="after")
    def _login_pair(self) -> EmailReceiver:
        if (self.username is None) != (self.password_secret is None):
            missing = "password_secret" if self.password_secret is None else "username"
            raise _Problems(
                [Problem((missing,), "an SMTP login needs both username and password_secret: give both, or neither")]
            )
        return self


class SlackReceiver(Strict):
    """A Slack incoming webhook; its URL (the secret) read from a file the role writes."""

    kind: Literal["slack"]
    name: Annotated[ReceiverName, Field(description="Receiver name the routes use (e.g. `chat`).")]
    webhook_secret: Annotated[
        AlertSecret,
        Field(
            description="Config key of the Pulumi secret with the incoming-webhook URL (e.g. `aicluster:slackWebhook`)."
        ),
    ]
    channel: Annotated[
        str | None,
        Field(pattern=SLACK_CHANNEL_RE, description="Channel to post to, if not the webhook's (e.g. `#gpu-alerts`)."),
    ] = None


class PagerDutyReceiver(Strict):
    """A PagerDuty Events API v2 integration; its routing key read from a file the role writes."""

    kind: Literal["pagerduty"]
    name: Annotated[ReceiverName, Field(description="Receiver name the routes use (e.g. `pager`).")]
    routing_key_secret: Annotated[
        AlertSecret,
        Field(
            description="Config key of the Pulumi secret with the integration's routing key (e.g. "
            "`aicluster:pagerdutyKey`)."
        ),
    ]


class WebhookReceiver(Strict):
    """Alertmanager's generic webhook (JSON POST). The URL is not secret in Alertmanager 0.25; a token is, sent as a
    bearer credential read from a file the role writes."""

    kind: Literal["webhook"]
    name: Annotated[ReceiverName, Field(description="Receiver name the routes use (e.g. `ticketing`).")]
    url: Annotated[
        str,
        Field(
            pattern=WEBHOOK_URL_RE, description="Where alerts are POSTed (e.g. `https://hooks.example.com/aicluster`)."
        ),
    ]
    token_secret: Annotated[
        AlertSecret | None,
        Field(
            description="Config key of the Pulumi secret with a bearer token, if the endpoint wants one (e.g. "
            "`aicluster:hookToken`)."
        ),
    ] = None


class SnsReceiver(Strict):
    """An Amazon SNS topic: the one receiver Amazon Managed Service for Prometheus delivers to (managed, on AWS). Its
    access policy must let the service (aps.amazonaws.com) publish."""

    kind: Literal["sns"]
    name: Annotated[ReceiverName, Field(description="Receiver name the routes use (e.g. `sns-oncall`).")]
    topic_arn: Annotated[
        str,
        Field(pattern=SNS_TOPIC_RE, description="The topic (e.g. `arn:aws:sns:us-east-1:123456789012:gpu-alerts`)."),
    ]


Receiver = Annotated[
    EmailReceiver | SlackReceiver | PagerDutyReceiver | WebhookReceiver | SnsReceiver, Field(discriminator="kind")
]


class AlertRoute(Strict):
    """Alerts that match go to `receiver`; routes are tried in order and the first match wins."""

    receiver: Annotated[ReceiverName, Field(description="A receiver's name (e.g. `pager`).")]
    severities: Annotated[
        list[AlertSeverity],
        Field(max_length=3, description="Severities it takes (e.g. `[critical]`); none: any severity."),
    ] = []
    groups: Annotated[
        list[AlertGroup],
        Field(max_length=4, description="Rule groups it takes (e.g. `[gpu, fabric]`); none: any group."),
    ] = []


class Alerts(Strict):
    """Where the alerts of `aicluster monitoring`'s rules go: Alertmanager receivers, and routes by severity and rule
    group. Secrets are named (Pulumi secret keys), never given; the configuration reads them from files."""

    receivers: Annotated[list[Receiver], Field(min_length=1, max_length=32, description="Where alerts can go.")]
    routes: Annotated[
        list[AlertRoute],
        Field(max_length=64, description="Tried in order, the first match wins (e.g. critical to a pager)."),
    ] = []
    receiver: Annotated[ReceiverName, Field(description="The receiver of alerts that no route matches (e.g. `chat`).")]

    @model_validator(mode="after")
    def _names(self) -> Alerts:
        names = [r.name for r in self.receivers]
        problems = [
            Problem(("receivers", i, "name"), "receiver names must be unique", n, True)
            for i, n in enumerate(names)
            if n in names[:i]
        ]
        for path, name in [(("receiver",), self.receiver)] + [
            (("routes", i, "receiver"), r.receiver) for i, r in enumerate(self.routes)
        ]:
            if name not in names:
                problems.append(
                    Problem(
                        path,
                        f"no receiver of that name (receivers: {', '.join(names)}); add it to receivers or name one "
                        "of those",
                        name,
                        True,
                        did_you_mean(name, names),
                    )
                )
        problems += self._unreachable_routes()
        if problems:
            raise _Problems(problems)
        return self

    def _unreachable_routes(self) -> list[Problem]:
        """A route that an earlier one covers (every severity and group it takes, the earlier takes too) is never
        reached: the first match wins, so its receiver would silently get nothing."""
        severities: tuple[str, ...] = get_args(AlertSeverity)
        groups: tuple[str, ...] = get_args(AlertGroup)

        def takes(r: AlertRoute) -> tuple[set[str], set[str]]:
            return set(r.severities or severities), set(r.groups or groups)

        problems = []
        for j, later in enumerate(self.routes):
            sev, grp = takes(later)
            for i, earlier in enumerate(self.routes[:j]):
                esev, egrp = takes(earlier)
                if sev <= esev and grp <= egrp:
                    problems.append(
                        Problem(
                            ("routes", j),
                            f"this route is never reached: routes[{i}] (receiver {earlier.receiver}) comes first "
                            "and takes every alert it would, and the first match wins; put the narrower route first, "
                            "or remove it",
                            later.receiver,
                            True,
                        )
                    )
                    break
        return problems


class Monitoring(Strict):
    prometheus: Annotated[
        Literal["self-hosted", "managed"],
        Field(
            description="`self-hosted`: Debian's Prometheus on the Slurm controller, with the configuration and rules "
            "`aicluster monitoring` writes (Kubernetes: Prometheus, Alertmanager and Grafana in the cluster, "
            "from the kube-prometheus-stack chart, with the same rules, routing and dashboards); `managed`: the "
            "cloud's managed Prometheus as stack resources (Amazon Managed Service for Prometheus, GKE managed "
            "collection, an Azure Monitor workspace), fed by the controller's Prometheus (remote_write) or the "
            "Kubernetes service's collector. On-prem has no managed option."
        ),
    ] = "self-hosted"
    slurm_exporter: Annotated[
        Literal["none", "binary", "url", "container"],
        Field(
            description="How the Slurm controller gets its Slurm exporter (SckyzO/slurm_exporter, which Debian does "
            "not package); `aicluster tune` installs it with the `slurm_exporter` role as a systemd service on the "
            "catalog's port, with the collectors that need slurmdbd off: `binary` runs the one your image or build "
            "put at `slurm_exporter_binary`; `url` downloads the catalog's release archive for the controller's "
            "architecture and checks it against the release's checksums file (`-e slurm_exporter_checksum=sha256:"
            "...` pins a digest); `container` runs `slurm_exporter_image` (required, `-e`) with docker or podman. "
            "Any of them makes the Prometheus configuration scrape it and alert on Slurm's node states and on the "
            "exporter being down. `none`: nothing installed, no Slurm job and no Slurm alerts (they would fire on a "
            "target nobody installed). Slurm stacks only."
        ),
    ] = "none"
    alerts: Annotated[
        Alerts | None,
        Field(
            description="Where alerts go (Alertmanager receivers and routes). Self-hosted: Debian's Alertmanager on "
            "the Slurm controller, its secrets written to files from Pulumi secrets; managed on AWS: the workspace's "
            "alert manager (SNS receivers only). None: the rules fire, but nothing is notified."
        ),
    ] = None
