"""What the model wrote at a step, shared by the pages: the step's responses (prompt, gold answer, every token
coloured, one colour legend) and its outlier tokens, each opening the response it comes from."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dhpo_suite.dashboard import controls, data
from dhpo_suite.dashboard.figures import outliers as fo
from dhpo_suite.dashboard.figures.tokens import CAPTIONS, COLOR_BY, color_legend_html, rollout_html

__all__ = ["step_samples", "responses", "outlier_rows", "response_header"]

_BRANCH = {"token_ratio": "token", "seq_ratio": "sequence", "mixed_ratio": "mixed"}  # its flags: clip_<branch>


def step_samples(path: str, step: int) -> pd.DataFrame:
    """The step's recorded responses (the sampled ones, then those outliers come from), problems shown."""
    samples, probs = data.samples(path, step)
    controls.show_problems(probs)
    if not samples.empty and "source" not in samples.columns:
        samples = samples.assign(source="sample")
    return samples


def response_header(row: pd.Series) -> str:
    """One line naming a response: id, reward, advantage, length (and where it comes from)."""
    reward = "—" if pd.isna(row.get("reward")) else f"{row['reward']:g}"
    adv = "—" if pd.isna(row.get("advantage")) else f"{row['advantage']:+.3g}"
    origin = " · recorded because an outlier token comes from it" if row.get("source") == "outlier" else ""
    epoch = f" · epoch {row['epoch']}" if row.get("epoch") else ""
    return (f"**Response #{row['response_id']}** · reward {reward} · advantage {adv} · {row['length']} tokens"
            f"{epoch}{origin}")


def _prompt(row: pd.Series) -> str:
    prompt, gold = row.get("prompt"), row.get("gold")
    parts = []
    if isinstance(prompt, str) and prompt:
        parts.append(f"**Prompt** {prompt.strip()}")
    if isinstance(gold, str) and gold:
        parts.append(f"**Gold answer** `{gold}`")
    return "  \n".join(parts) if parts else "*Prompt and gold answer not recorded by this run's trainer.*"


def responses(ctx: controls.Context, run: str, step: int, key: str, rows: pd.DataFrame | None = None,
              mark: int | None = None) -> None:
    """Draw responses of `step` (default: the sampled ones) with their prompt and gold answer, coloured by the
    chosen quantity, with the legend of that colouring and its caption; `mark` outlines one token position."""
    path = ctx.path(run)
    samples = step_samples(path, step)
    if samples.empty:
        st.info(f"No responses recorded at step {step} of {run}.")
        return
    shown = samples[samples["source"] == "sample"] if rows is None else rows
    # Colour by one of the quantities this run recorded.
    have = [lbl for lbl, col in COLOR_BY.items() if col in samples.columns and samples[col].notna().any()]
    label = st.radio("Colour tokens by", have or list(COLOR_BY), horizontal=True, key=f"{key}_color")
    column = COLOR_BY[label]
    branch = _BRANCH.get(column)
    bounds = (data.trust_bounds(path, step, branch, data.manifest_telemetry(path, data.run_version(path)))
              if branch is not None else None)
    top = (max((max(v) for v in samples["entropy"] if v is not None and len(v)), default=1.0) or 1.0
           if column == "entropy" else None)
    st.markdown(color_legend_html(column, bounds, top), unsafe_allow_html=True)
    st.caption(CAPTIONS["ratio" if branch else column])
    for _, row in shown.iterrows():
        st.markdown(response_header(row))
        st.markdown(_prompt(row))
        if row[column] is None or row["token_text"] is None:
            st.info(f"{label} or the token text was not recorded for this response.")
            continue
        flags = row.get(f"clip_{branch}") if branch else None
        outside = [bool(f & 3) for f in flags] if flags is not None else None
        st.markdown(rollout_html(list(row["token_text"]), list(row[column]), column, bounds, outside, top, mark),
                    unsafe_allow_html=True)


def outlier_rows(ctx: controls.Context, run: str, step: int, branches: list[str], key: str) -> None:
    """The step's outlier tokens (farthest outside first); selecting a row opens its full response below."""
    path = ctx.path(run)
    table, probs = data.outliers(path, step)
    controls.show_problems(probs)
    shown = fo.outlier_table(table, branches)
    if st.toggle("Only tokens that carry gradient", key=f"{key}_grad",
                 help="Advantage ≠ 0, or the clip binds: a token of a group whose responses all got the same reward "
                      "has advantage 0, and the update does not act on it") and not shown.empty:
        hidden = int((~fo.carries_gradient(shown)).sum())
        shown = shown[fo.carries_gradient(shown)].reset_index(drop=True)
        st.caption(f"{hidden} outlier tokens without gradient hidden")
    st.caption("Select a row to open the response the token comes from (the token is outlined in orange).")
    event = st.dataframe(shown, column_config={c: st.column_config.NumberColumn(c, format="%.4g") for c in
                                               ("distance", "ratio", "entropy", "w", "advantage")},
                         key=f"{key}_table", on_select="rerun", selection_mode="single-row", hide_index=True)
    picked = event.selection.rows if event is not None else []
    if not picked or picked[0] >= len(shown):
        return
    o = shown.iloc[picked[0]]
    samples = step_samples(path, step)
    match = samples[(samples["response_id"] == o["response_id"]) & (samples["epoch"] == o["epoch"])] \
        if not samples.empty else samples
    if match.empty and not samples.empty:
        match = samples[samples["response_id"] == o["response_id"]]
    st.markdown(f"#### The response of outlier ⟦{o['context'].split('⟦')[1].split('⟧')[0]}⟧ "
                f"({o['branch']} branch, position {o['position']})")
    if match.empty:
        st.info(f"Response #{o['response_id']} was not recorded at step {step}: a step keeps the responses of "
                "its farthest outliers only (TelemetrySpec.outlier_responses, default 16), and runs written before "
                "outlier responses were recorded keep only the sampled responses.")
        return
    responses(ctx, run, step, f"{key}_open", rows=match.head(1), mark=int(o["position"]))
