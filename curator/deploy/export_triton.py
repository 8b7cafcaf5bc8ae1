"""The ``export_triton`` pipeline stage: checkpoint -> Triton model repository.

Takes the upstream ``checkpoint`` (and ``tokenizer`` when an upstream stage published one,
else the tokenizer recorded in the checkpoint's model config), passes documents through and
publishes ``triton_repository`` (the folder to give ``tritonserver --model-repository``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from curator.core.context import GlobalContext, StageContext
from curator.core.params import NonNegInt, PositiveInt, StageParams
from curator.core.stage import DirPath, GlobalStage, OutputDir, Shard
from curator.deploy.export import MODEL_NAME


@dataclass(frozen=True, kw_only=True)
class Exported:
    """What the export task wrote: the repository, its ensemble and models, the checkpoint
    iteration and the sequence length."""

    repository: str
    ensemble: str
    models: tuple[str, ...]
    checkpoint_iteration: int
    seq_length: int


class ExportTriton(GlobalStage):
    """Export the trained GPT as a Triton ensemble (tokenizer -> GPT greedy -> detokenizer)."""

    name = "export_triton"
    replaces_outputs = True

    class Params(StageParams):
        output: OutputDir = "triton_repository"
        """Repository folder (relative = under work_dir); replaced as a whole on a rerun, so it must
        be new, empty or an earlier export: `.`, the work_dir, a parent of either or a folder
        holding other files are refused with one line (see
        [running.md](running.md#output-folders))."""
        checkpoint: DirPath = ""
        """Checkpoint folder; empty = upstream `checkpoint` artifact."""
        model_name: Annotated[str, Field(pattern=MODEL_NAME)] = "curator_gpt"
        """Name of the ensemble in the repository: a folder name (letters, digits, `_`, `.`,
        `-`; up to 128)."""
        max_new_tokens: PositiveInt = 16
        """Used when a request has no `MAX_NEW_TOKENS`."""
        max_batch_size: PositiveInt = 8
        """Triton's max_batch_size."""
        instance_kind: Literal["KIND_CPU", "KIND_GPU"] = "KIND_CPU"
        """`KIND_CPU` / `KIND_GPU` (GPT model)."""
        instances: PositiveInt = 1
        """Instances per model."""
        max_queue_delay_us: NonNegInt = 1000
        """Dynamic batching delay, in microseconds."""
        stop_at_eod: bool = False
        """Stop generating at the tokenizer's EOD id."""

    def output_dirs(self, ctx: StageContext) -> list[str]:
        return [ctx.output_path(self.output)]

    def run(self, shards: list[Shard], ctx: GlobalContext) -> list[Shard]:
        out = ctx.output_path(self.output)
        kw = dict(tokenizer=ctx.artifact("tokenizer", None), name=self.model_name,
                  max_new_tokens=self.max_new_tokens, max_batch_size=self.max_batch_size,
                  instance_kind=self.instance_kind, instances=self.instances,
                  max_queue_delay_us=self.max_queue_delay_us, stop_at_eod=self.stop_at_eod,
                  work_dir=ctx.work_dir)
        # one task on one worker under every executor (all MPI ranks get the summary)
        summary = ctx.map(_export, [(self.checkpoint or ctx.artifact("checkpoint"), out, kw)])[0]
        if ctx.is_root:
            ctx.artifacts["report_tables"] = [{
                "title": "Triton model repository",
                "columns": ["repository", "ensemble", "models", "checkpoint iteration"],
                "rows": [[summary.repository, summary.ensemble,
                          ", ".join(summary.models), summary.checkpoint_iteration]],
            }]
        ctx.artifacts["triton_repository"] = out
        ctx.artifacts["triton_model"] = self.model_name
        return ctx.passthrough(shards)


def _export(task: tuple[str, str, dict[str, Any]]) -> Exported:
    from curator.deploy.export import export_repository

    checkpoint, out, kw = task
    s = export_repository(checkpoint, out, **kw)  # claimed by the runner already
    return Exported(repository=s["repository"], ensemble=s["ensemble"],
                    models=tuple(s["models"]), checkpoint_iteration=s["checkpoint_iteration"],
                    seq_length=s["seq_length"])
