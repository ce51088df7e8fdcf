"""The toolkit graph drawn as text: Graphviz DOT and Mermaid, scores on the edges."""

from __future__ import annotations

from typing import Any


def score_text(score: float) -> str:
    """A score as people write it: 1, 0.9, 0.85."""
    return format(score, "g")


def draw_dot(drawing: Any) -> str:
    """A ``toolkit.graph.Drawing`` as Graphviz DOT: actions boxes, tools ellipses, scored edges."""
    lines = ["digraph toolkit {", "  rankdir=LR;"]
    starts = set(drawing.starts)
    for name in drawing.actions:
        bold = ", penwidth=2" if name in starts else ""
        lines.append(f'  "action:{name}" [label="{name}", shape=box, style=rounded{bold}];')
    lines += [f'  "tool:{name}" [label="{name}", shape=ellipse];' for name in drawing.tools]
    for group, tools in drawing.groups.items():
        lines.append(f'  "group:{group}" [label="{group}", shape=hexagon];')
        lines += [f'  "group:{group}" -> "tool:{t}" [style=dotted, arrowhead=none];' for t in tools]
    for edge in drawing.edges:
        target, style = ("action", "solid") if edge.kind == "next" else ("tool", "dashed")
        lines.append(
            f'  "action:{edge.source}" -> "{target}:{edge.target}" '
            f'[label="{score_text(edge.score)}", style={style}];'
        )
    return "\n".join([*lines, "}"]) + "\n"


def _mermaid_id(prefix: str, name: str) -> str:
    # Injective: '_' doubles, '-' and '.' become '_h' and '_d' (Mermaid ids dislike both).
    return prefix + "_" + name.replace("_", "__").replace("-", "_h").replace(".", "_d")


def draw_mermaid(drawing: Any) -> str:
    """A ``toolkit.graph.Drawing`` as a Mermaid flowchart with scores on the edges."""
    lines = ["flowchart LR"]
    lines += [f'  {_mermaid_id("a", name)}["{name}"]' for name in drawing.actions]
    lines += [f'  {_mermaid_id("t", name)}(["{name}"])' for name in drawing.tools]
    for group, tools in drawing.groups.items():
        lines.append(f'  {_mermaid_id("g", group)}{{{{"{group}"}}}}')
        lines += [f"  {_mermaid_id('g', group)} -.- {_mermaid_id('t', t)}" for t in tools]
    for edge in drawing.edges:
        arrow, prefix = ("-->", "a") if edge.kind == "next" else ("-.->", "t")
        lines.append(
            f"  {_mermaid_id('a', edge.source)} {arrow}|{score_text(edge.score)}| "
            f"{_mermaid_id(prefix, edge.target)}"
        )
    if drawing.starts:
        lines.append("  classDef start stroke-width:3px")
        lines += [f"  class {_mermaid_id('a', name)} start" for name in drawing.starts]
    return "\n".join(lines) + "\n"
