"""Workloads: what the cluster is for. A model, a training run and targets, sized by aicluster/sizing.

Counts (parameters, tokens, batch) are written the way people say them: `70.6B`, `15T`, `16Mi`. Decimal
suffixes K/M/B/T are powers of 1,000; binary Ki/Mi/Gi/Ti are powers of 1,024; `7e10` (quoted, or as YAML
reads it) is accepted too. Every count is a whole number, positive and bounded.

Imports only aicluster.spec.base (the spec is a leaf of the project).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from .base import COUNT_RE, DNS_LABEL_RE, WORKLOAD_NAME_RE, Problem, Strict, _Problems

_SUFFIX = {
    "": 1,
    "K": 10**3,
    "M": 10**6,
    "B": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}
_COUNT_RE = re.compile(r"(\d{1,30}(?:\.\d{1,30})?(?:[eE][+]?\d{1,3})?)(K|M|B|T|Ki|Mi|Gi|Ti)?")
_FORM = "a whole number, or a number with K/M/B/T (x1000s) or Ki/Mi/Gi/Ti (x1024s)"


# suffixes people write that this notation spells otherwise: SI's G (giga) is B here (billions), lower case is upper
_SUFFIX_MEANT = {"k": ["K"], "m": ["M"], "b": ["B"], "t": ["T"], "G": ["B", "Gi"], "g": ["B", "Gi"], "bn": ["B"],
                 "ki": ["Ki"], "mi": ["Mi"], "gi": ["Gi"], "ti": ["Ti"], "KB": ["K", "Ki"], "MB": ["M", "Mi"],
                 "GB": ["B", "Gi"], "TB": ["T", "Ti"]}  # fmt: skip


def _suffix_meant(value: str) -> str:
    """`; did you mean "366B" or "366Gi"?` for a number with a suffix the notation spells otherwise, else ""."""
    m = re.fullmatch(r"(\d{1,30}(?:\.\d{1,30})?)\s?([A-Za-z]{1,3})", value)
    if m is None or m.group(2) not in _SUFFIX_MEANT:
        return ""
    return "; did you mean " + " or ".join(f'"{m.group(1)}{s}"' for s in _SUFFIX_MEANT[m.group(2)]) + "?"


def _count(limit: float, example: str) -> Any:
    """A BeforeValidator: int, finite float or suffixed string -> int in [1, limit]."""

    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise PydanticCustomError("count", "must be {form} (e.g. {example})", {"form": _FORM, "example": example})
        if isinstance(value, str):
            m = _COUNT_RE.fullmatch(value) if len(value) <= 64 else None
            if m is None:
                raise PydanticCustomError(
                    "count",
                    "must be {form} (e.g. {example}){meant}",
                    {"form": _FORM, "example": example, "meant": _suffix_meant(value)},
                )
            number = float(m.group(1)) * _SUFFIX[m.group(2) or ""]
        else:
            if isinstance(value, float) and not math.isfinite(value):
                raise PydanticCustomError("count", "must be a finite number (e.g. {example})", {"example": example})
            number = float(value) if isinstance(value, float) else value
        if number < 1:
            raise PydanticCustomError("count", "must be at least 1 (e.g. {example})", {"example": example})
        if number > limit:
            raise PydanticCustomError(
                "count", "must be at most {limit} (e.g. {example})", {"limit": f"{limit:.0e}", "example": example}
            )
        return round(number)

    return parse


def _count_schema(limit: float) -> WithJsonSchema:
    return WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": limit},
                {"type": "string", "pattern": COUNT_RE},
            ]
        }
    )


ParameterCount = Annotated[int, BeforeValidator(_count(1e15, "70.6B")), _count_schema(1e15)]
TokenCount = Annotated[int, BeforeValidator(_count(1e17, "15T")), _count_schema(1e17)]
BatchTokens = Annotated[int, BeforeValidator(_count(1e12, "16Mi")), _count_schema(1e12)]

_SIZE_RE = re.compile(r"(\d{1,7})\s?([kKmM])(i?)[a-zA-Z]{0,6}")


def _size_not_count(value: Any) -> Any:
    """A size of the model (sequence length, hidden or feed-forward width) is a plain whole number: `8k` is said of
    8,192 tokens, but the counts' `K` is x1000, so a suffix is refused with the number to write, never guessed."""
    if isinstance(value, str):
        m = _SIZE_RE.fullmatch(value.strip())
        if m is not None:
            unit = 1024 if m.group(2) in "kK" else 1024**2
            raise PydanticCustomError(
                "size_suffix",
                "must be a whole number, without a suffix: write {exact} ({n} x {unit})",
                {"exact": int(m.group(1)) * unit, "n": int(m.group(1)), "unit": unit},
            )
    return value


Dim = Annotated[int, Field(strict=True, ge=1, le=1_048_576), BeforeValidator(_size_not_count)]


def _whole_choice(choices: Any) -> Any:
    """A BeforeValidator for `auto` or a whole number of `choices`: YAML `true` is not the number 1, nor `2.0`
    the degree 2 (as for every count of the spec)."""
    expected = ", ".join(repr(c) for c in get_args(choices))

    def check(value: Any) -> Any:
        if isinstance(value, bool):
            raise PydanticCustomError("not_bool", "must be a number or auto, not true/false", {})
        if isinstance(value, float):
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
        return value

    return BeforeValidator(check)


_Degrees = Literal["auto", 1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
_ZeroStages = Literal["auto", 0, 1, 2, 3]
Degree = Annotated[_Degrees, _whole_choice(_Degrees)]
ZeroStage = Annotated[_ZeroStages, _whole_choice(_ZeroStages)]


class Model(Strict):
    """The model being trained: its size and shape."""

    parameters: Annotated[
        ParameterCount | None,
        Field(
            description="Total parameters (e.g. `70.6B`; K/M/B/T decimal, Ki/Mi/Gi binary). Optional when layers, "
            "hidden_size, heads and vocabulary are given: then computed from them. Given alone, the estimator "
            "derives a shape for activation memory (hidden = 128 x layers, the aspect of Llama 3 8B/70B/405B: "
            "4096/32, 8192/80, 16384/126; layers rounded to a multiple of 8; 128-wide heads) and says so in the "
            "estimate's notes."
        ),
    ] = None
    layers: Annotated[
        int | None, Field(strict=True, ge=1, le=10_000, description="Transformer layers (e.g. `80`).")
    ] = None
    hidden_size: Annotated[Dim | None, Field(description="Model (hidden) dimension (e.g. `8192`).")] = None
    heads: Annotated[
        int | None, Field(strict=True, ge=1, le=65_536, description="Attention (query) heads (e.g. `64`).")
    ] = None
    kv_heads: Annotated[
        int | None,
        Field(
            strict=True,
            ge=1,
            le=65_536,
            description="Key/value heads (grouped-query attention, e.g. `8`); default: heads (multi-head attention).",
        ),
    ] = None
    ffn_size: Annotated[
        Dim | None,
        Field(
            description="Feed-forward inner size (e.g. `28672`), per expert for MoE. Default: 4 x hidden_size for "
            "mlp gelu; 2/3 of that, rounded up to a multiple of 256, for mlp swiglu (LLaMA's choice)."
        ),
    ] = None
    mlp: Annotated[
        Literal["swiglu", "gelu"],
        Field(description="Feed-forward kind: `swiglu` (3 matrices; Llama, Mixtral) or `gelu` (2 matrices; GPT)."),
    ] = "swiglu"
    vocabulary: Annotated[
        int | None,
        Field(
            strict=True,
            ge=1,
            le=10_000_000,
            description="Vocabulary size (e.g. `128256`); needed when parameters is computed.",
        ),
    ] = None
    sequence_length: Annotated[
        Dim, Field(description="Training sequence length in tokens (e.g. `8192`); activations grow with it.")
    ]
    kind: Annotated[Literal["dense", "moe"], Field(description="`dense`, or `moe` (mixture of experts).")] = "dense"
    experts: Annotated[
        int | None, Field(strict=True, ge=2, le=65_536, description="MoE only: experts per MoE layer (e.g. `8`).")
    ] = None
    experts_per_token: Annotated[
        int | None, Field(strict=True, ge=1, le=65_536, description="MoE only: experts each token is routed to.")
    ] = None
    active_parameters: Annotated[
        ParameterCount | None,
        Field(
            description="MoE only: parameters used per token (e.g. `12.9B`); default: computed from the "
            "architecture (attention + experts_per_token experts + embeddings)."
        ),
    ] = None

    @model_validator(mode="after")
    def _shape(self) -> Model:
        problems: list[Problem] = []
        shape = {"layers": self.layers, "hidden_size": self.hidden_size, "heads": self.heads}
        if self.parameters is None:
            for key, val in {**shape, "vocabulary": self.vocabulary}.items():
                if val is None:
                    problems.append(
                        Problem(
                            (key,),
                            "required when parameters is not given (the count is computed from layers, hidden_size, "
                            "heads, ffn_size and vocabulary): give it, or give parameters (e.g. 70.6B)",
                        )
                    )
        given = [k for k, v in shape.items() if v is not None]
        if given and len(given) < 3 and self.parameters is not None:
            for key in sorted(set(shape) - set(given)):
                problems.append(
                    Problem(
                        (key,),
                        f"required with {', '.join(given)}: give the whole shape (layers, hidden_size, heads) or "
                        "none of it (then a shape is derived from parameters)",
                    )
                )
        if self.heads is not None and self.hidden_size is not None and self.hidden_size % self.heads:
            problems.append(
                Problem(
                    ("heads",),
                    f"must divide hidden_size ({self.hidden_size}): each head is hidden_size / heads wide",
                    self.heads,
                    True,
                )
            )
        if self.kv_heads is not None:
            if self.heads is None:
                problems.append(Problem(("kv_heads",), "needs heads: give heads too", self.kv_heads, True))
            elif self.kv_heads > self.heads or self.heads % self.kv_heads:
                problems.append(
                    Problem(
                        ("kv_heads",),
                        f"must divide heads ({self.heads}): each key/value head serves heads / kv_heads query heads",
                        self.kv_heads,
                        True,
                    )
                )
        moe_fields = {
            "experts": self.experts,
            "experts_per_token": self.experts_per_token,
            "active_parameters": self.active_parameters,
        }
        if self.kind == "dense":
            for key, val in moe_fields.items():
                if val is not None:
                    problems.append(Problem((key,), "only for kind moe: drop it, or set kind: moe", val, True))
        else:
            for key in ("experts", "experts_per_token"):
                if moe_fields[key] is None:
                    problems.append(Problem((key,), "required for kind moe (e.g. experts: 8, experts_per_token: 2)"))
            if self.experts and self.experts_per_token and self.experts_per_token > self.experts:
                problems.append(
                    Problem(
                        ("experts_per_token",),
                        f"must be at most experts ({self.experts}): a token cannot use more experts than exist",
                        self.experts_per_token,
                        True,
                    )
                )
            if (
                self.active_parameters is not None
                and self.parameters is not None
                and self.active_parameters > self.parameters
            ):
                problems.append(
                    Problem(
                        ("active_parameters",),
                        f"must be at most parameters ({self.parameters:,}): a token uses a subset of the model",
                        self.active_parameters,
                        True,
                    )
                )
        if problems:
            raise _Problems(problems)
        return self


class Training(Strict):
    """The training run: how many tokens, in what batches, and how (precision, sharding, recomputation)."""

    tokens: Annotated[TokenCount, Field(description="Training tokens (e.g. `15T`, `2T`, `300B`).")]
    global_batch_tokens: Annotated[
        BatchTokens,
        Field(
            description="Tokens per optimizer step (e.g. `16Mi` = 2,048 sequences of 8,192); rounded to whole "
            "sequences per data-parallel rank by the layout."
        ),
    ]
    precision: Annotated[
        Literal["bf16", "fp8"],
        Field(description="Matmul precision: `bf16`, or `fp8` (FP8 tensor cores; weights and states as bf16)."),
    ] = "bf16"
    optimizer: Annotated[
        Literal["adam", "adamw", "sgd"],
        Field(
            description="Optimizer, for the bytes of state per parameter: `adam`/`adamw` (fp32 master, m, v) or "
            "`sgd` (with momentum: fp32 master, momentum)."
        ),
    ] = "adamw"
    zero_stage: Annotated[
        ZeroStage,
        Field(description="ZeRO stage: `auto` (searched), 0 (plain DDP), 1, 2, or 3 (= FSDP full shard)."),
    ] = "auto"
    recompute: Annotated[
        Literal["auto", "none", "selective", "full"],
        Field(description="Activation recomputation: `auto` (searched), `none`, `selective`, `full`."),
    ] = "auto"
    flash_attention: Annotated[
        bool,
        Field(
            description="FlashAttention kernels: the s x s attention matrices are never stored (true by default, "
            "as in current Megatron-LM and torchtitan)."
        ),
    ] = True
    tensor_parallel: Annotated[
        Degree,
        Field(
            description="Tensor-parallel degree: `auto` (searched, within one NVLink domain: a node, or the 72 GPUs "
            "of a GB200/GB300 NVL72 rack) or a power of two."
        ),
    ] = "auto"
    pipeline_parallel: Annotated[
        Literal["auto"] | Annotated[int, Field(strict=True, ge=1, le=1024)],
        Field(description="Pipeline stages: `auto` (searched) or a count (e.g. `16`)."),
    ] = "auto"


MIN_TARGET_DAYS = round(1 / 24, 4)  # one hour: a training run's target is not shorter (and 5e-324 overflowed sizing)


class Targets(Strict):
    """What the run must meet: a wall-clock time, a GPU budget, or both."""

    days: Annotated[
        float | None,
        Field(
            ge=MIN_TARGET_DAYS,
            le=3650,
            allow_inf_nan=False,
            description="Wall-clock days the run should finish in (e.g. `30`; at least one hour, 0.0417).",
        ),
    ] = None
    gpus: Annotated[
        int | None,
        Field(strict=True, ge=1, le=10_000_000, description="Most GPUs the run may use (e.g. `1024`)."),
    ] = None


def _some_pools(pools: list[str]) -> list[str]:
    if not pools:
        raise PydanticCustomError("no_pools", "name at least one pool of this stack (e.g. [h100])", {})
    return pools


class Workload(Strict):
    """A training job the cluster is for; `aicluster size` and the preview size it on its pools."""

    name: Annotated[
        str,
        Field(
            pattern=WORKLOAD_NAME_RE,
            max_length=63,
            description="Workload name, a lowercase DNS label (e.g. `llama3-70b`).",
        ),
    ]
    pools: Annotated[
        list[Annotated[str, Field(pattern=DNS_LABEL_RE, max_length=63)]],
        AfterValidator(_some_pools),
        Field(
            max_length=64,
            json_schema_extra={"minItems": 1},
            description="Pools of this stack it runs on (e.g. `[h100]`).",
        ),
    ]
    model: Annotated[Model, Field(description="The model: size, shape, sequence length, dense or MoE.")]
    training: Annotated[Training, Field(description="The run: tokens, batch, precision, optimizer, sharding.")]
    targets: Annotated[Targets, Field(description="Targets: wall-clock days and/or a GPU budget.")] = Targets()

    @model_validator(mode="after")
    def _fits(self) -> Workload:
        """Given parallel degrees must suit the model's shape; a batch holds whole sequences, a run whole batches."""
        problems: list[Problem] = []
        seq, batch, tokens = self.model.sequence_length, self.training.global_batch_tokens, self.training.tokens
        if batch < seq:
            problems.append(
                Problem(
                    ("training", "global_batch_tokens"),
                    f"must be at least one sequence (model.sequence_length: {seq:,} tokens): give at least {seq}, "
                    f"usually many sequences (e.g. 16Mi = {16 * 2**20 // seq:,} sequences of {seq:,})",
                    batch,
                    True,
                )
            )
        elif tokens < batch:
            problems.append(
                Problem(
                    ("training", "tokens"),
                    f"must be at least one global batch (training.global_batch_tokens: {batch:,} tokens): give at "
                    f"least {batch}, usually thousands of batches (e.g. 15T)",
                    tokens,
                    True,
                )
            )
        tp, pp = self.training.tensor_parallel, self.training.pipeline_parallel
        heads, layers = self.model.heads, self.model.layers
        if tp != "auto" and heads is not None and heads % tp:
            problems.append(
                Problem(
                    ("training", "tensor_parallel"),
                    f"must divide model.heads ({heads}): each GPU of a tensor-parallel group takes whole heads",
                    tp,
                    True,
                )
            )
        if pp != "auto" and layers is not None and pp > layers:
            problems.append(
                Problem(
                    ("training", "pipeline_parallel"),
                    f"must be at most model.layers ({layers}): each stage holds at least one layer",
                    pp,
                    True,
                )
            )
        if problems:
            raise _Problems(problems)
        return self
