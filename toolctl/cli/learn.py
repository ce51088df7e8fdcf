"""`toolctl graph learn` and `toolctl graph evaluate`: next-tool scores learned from use."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolctl.cli.common import JsonOption, RegistryOption, StrictOption, reporter, settings_for


def install(group: typer.Typer) -> None:
    group.command("learn")(learn_command)
    group.command("evaluate")(evaluate_command)


def learn_command(
    transcripts: Annotated[
        list[Path] | None,
        typer.Option(
            "--from-transcripts",
            metavar="FILE",
            help="OpenAI chat JSONL ('-': stdin); repeat. Default: the run history.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            metavar="FILE",
            help="'-': stdout. Default: the registry's toolctl.learned.",
        ),
    ] = None,
    registry: RegistryOption = None,
    strict: StrictOption = False,
    json: JsonOption = False,
) -> None:
    """Learn next-tool scores from sessions of calls and write the learned file: the run
    history's (`toolctl history`: calls made through toolctl and imported transcripts), or
    the --from-transcripts files'.

    Also proposes Call/Next edge scores for the registry's actions (never written into a
    descriptor). Exit 2 for an unreadable or malformed transcript (file:line).
    """
    from toolctl.cli.common import open_registry
    from toolctl.errors import UsageError
    from toolctl.learning.usecases import learn_from_history, learn_from_transcripts
    from toolctl.terminal import views

    if json and out is not None and str(out) == "-":
        raise UsageError("--out - writes the learned file to stdout: drop --json")
    settings = settings_for(registry, strict)
    reg = open_registry(settings)
    if transcripts:
        done = learn_from_transcripts(transcripts, reg, out)
    else:
        done = learn_from_history(reg, out, reporter(settings))
    views.print_learned(done, as_json=json)


def evaluate_command(
    files: Annotated[list[Path], typer.Argument(metavar="FILE...", help="OpenAI chat JSONL.")],
    folds: Annotated[
        int, typer.Option(min=2, metavar="N", help="Conversation i is in fold i mod N.")
    ] = 5,
    top: Annotated[
        int, typer.Option(min=1, max=1000, metavar="K", help="The length K of each ranked list.")
    ] = 5,
    json: JsonOption = False,
) -> None:
    """Recall@K of the next call on held-out conversations: the learned blend against
    popularity-only and transition-only baselines, N-fold cross-validated.

    Exit 2 for a malformed transcript or more folds than conversations.
    """
    from toolctl.learning.usecases import evaluate_files
    from toolctl.terminal import views

    views.print_evaluation(evaluate_files(files, folds, top), as_json=json)
