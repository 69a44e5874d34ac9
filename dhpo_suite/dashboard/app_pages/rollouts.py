"""What did the model write at step N: a step box and slider, then every sampled response with its prompt and
gold answer, each token coloured (ratio, entropy or w) with the legend of that colouring."""

import streamlit as st

from dhpo_suite.dashboard import controls, frames, viewer

ctx = controls.context()
st.title("Responses")
if not ctx.selected:
    st.info("Pick a run in the sidebar.")
    st.stop()
wanted = controls.url_param("run")
if wanted in ctx.selected and "rollouts_run" not in st.session_state:
    st.session_state["rollouts_run"] = wanted
run = st.selectbox("Run", ctx.selected, key="rollouts_run")
controls.set_url(run=run)
scal, problems = frames.scalars_frame(ctx, [run])
controls.show_problems(problems)
steps = [int(s) for s in scal["step"]]
if not steps:
    st.stop()
step = controls.step_picker(steps, "rollouts_step")
viewer.responses(ctx, run, step, "rollouts")
