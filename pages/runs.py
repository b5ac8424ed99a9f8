"""Runs: start a classifier or detection run, or resume a stopped one, as a background process; watch it,
cancel it.  Everyone sees the history; only run operators and admins get the form, the cancel and resume
buttons and the logs (and ``objrel.engine.jobs`` checks the role again on every start and cancel), uploads of
datasets and weights, renaming and deleting runs (``objrel.engine.manage`` checks the role).  Everyone sees each
run's skipped and untested samples with their reasons."""

from dataclasses import asdict

import pandas as pd
import streamlit as st

from objrel import access
from objrel.analysis.overview import run_history, runs_that_tested_nothing, sample_issue_total
from objrel.app import captions, run_captions
from objrel.app.caches import open_store
from objrel.app.current_actor import current_actor, same_actor
from objrel.app.state import init_value, keep_choice
from objrel.app.tables import frame
from objrel.app.text import plain
from objrel.app.upload_box import upload_box
from objrel.app.widgets import page_sidebar, use_app_navigation
from objrel.data import uploads
from objrel.engine import jobs, manage
from objrel.engine.run_form import (CLASSIFIER, DETECTOR, MAX_DILATE_PX, MAX_SEED, MAX_VOTE_K, TASK_LABELS, TASKS,
                                    RunForm, base_config, choice_label, extra_operator_choices, root_choices,
                                    stored_config, task_of, web_models)
from objrel.constants import RUNTIMES
from objrel.errors import NotAllowed
from objrel.mutations import PRESETS

use_app_navigation()

NEW_RUN = "(new run)"
# Samples of the issues table a page shows (a run's skipped samples can be most of a big dataset).
ISSUES_PAGE_ROWS = 200
BASE_KEY, TASK_KEY = "runs_base", "runs_task"
# The form's widget keys by RunForm field; the model field has one widget per task.
FIELD_KEYS = {"weights": "runs_weights", "dataset": "runs_dataset", "images": "runs_images", "plan": "runs_plan",
              "operators": "runs_ops", "vote_k": "runs_vote_k", "dilate": "runs_dilate", "test_all": "runs_all",
              "detected_only": "runs_detected_only", "seed": "runs_seed", "limit": "runs_limit",
              "name": "runs_name", "runtime": "runs_runtime"}
MODEL_KEYS = {CLASSIFIER: "runs_model", DETECTOR: "runs_detector"}

store = open_store()
actor = page_sidebar(store)
operator = access.permits(actor, access.START_RUN)
st.title("Runs")
st.caption("Runs started here are separate processes: they keep going if you close the page, and every page "
           "sees their progress through the store.")

runs = store.list_runs()
by_id = {r.id: r for r in runs}
# The folders the start form offers files from: the allowed roots, uploads narrowed to this store's own.
roots = manage.form_roots(store)
UPLOADED_KEY = "runs_just_uploaded"    # the name of the upload this run of the page stored
CANCEL_NOTE_KEY = "runs_cancel_note"    # (done, text) the Cancel button's callback leaves for the next refresh


def chosen_base():
    """The configuration of the run picked as the starting point, or None for a new run."""
    pick = st.session_state.get(BASE_KEY, NEW_RUN)
    return None if pick == NEW_RUN else stored_config(store, pick)


def fill_form(values: RunForm, overwrite: bool) -> None:
    """Put a RunForm's values into the form's widgets: all of them, or only those not set yet."""
    put = st.session_state.__setitem__ if overwrite else init_value
    put(MODEL_KEYS[values.task], values.model)
    for name, key in FIELD_KEYS.items():
        put(key, list(values.operators) if name == "operators" else getattr(values, name))
    listed = web_models(store, values.task)
    if st.session_state.get(MODEL_KEYS[values.task]) not in listed:  # e.g. a py: model started on the server
        st.session_state[MODEL_KEYS[values.task]] = listed[0]


def on_base_change() -> None:
    base = chosen_base()
    if base is not None:
        st.session_state[TASK_KEY] = task_of(base)
    fill_form(RunForm.from_config(base_config(st.session_state[TASK_KEY], base)), overwrite=True)


def on_task_change() -> None:
    fill_form(RunForm.from_config(base_config(st.session_state[TASK_KEY], chosen_base())), overwrite=True)


def pick_from_roots(where, label: str, key: str, options: list[str]) -> None:
    """A choice among what the allowed data folders hold (never a typed path); a value the list lacks (from a
    run started on the server) falls back to the first option."""
    keep_choice(key, options[0], options)
    where.selectbox(label, options, key=key, format_func=lambda v: v if v in ("", "demo", "demo-faces") or not v
                    else choice_label(v, roots),
                    help="Files in the allowed data folders and uploads; upload your own below.")


def start_form() -> None:
    keep_choice(BASE_KEY, NEW_RUN, [NEW_RUN, *by_id])
    keep_choice(TASK_KEY, CLASSIFIER, TASKS)
    c1, c2 = st.columns([3, 2])
    if runs:
        c1.selectbox("Start from the settings of", [NEW_RUN, *by_id], key=BASE_KEY, on_change=on_base_change,
                     format_func=lambda v: v if v == NEW_RUN else captions.run_label(by_id[v]))
    task = c2.radio("Task", TASKS, key=TASK_KEY, format_func=TASK_LABELS.get, horizontal=True,
                    on_change=on_task_change)
    base = chosen_base()
    fill_form(RunForm.from_config(base_config(task, base)), overwrite=False)
    with st.form("runs_form"):
        c1, c2 = st.columns(2)
        c1.selectbox("Detector" if task == DETECTOR else "Model", web_models(store, task), key=MODEL_KEYS[task],
                     help="The app runs models from this list only; an admin can register more (Users page).")
        pick_from_roots(c1, "Weights file (optional)", "runs_weights", [""] + root_choices("weights", roots))
        builtin = ["demo-faces"] if task == DETECTOR else ["demo"]
        pick_from_roots(c2, "Dataset", "runs_dataset", builtin + root_choices("annotation", roots))
        pick_from_roots(c2, "Images folder (optional)", "runs_images", [""] + root_choices("images", roots))
        c3, c4, c5 = st.columns(3)
        c3.selectbox("Plan", PRESETS, key="runs_plan")
        c3.multiselect("Extra operators", extra_operator_choices(), key="runs_ops")
        c4.number_input("Violations needed of 3", 1, MAX_VOTE_K, key="runs_vote_k")
        c4.number_input("Dilate region (px)", 0, MAX_DILATE_PX, key="runs_dilate")
        if task == DETECTOR:
            c5.toggle("Test only objects detected on the source", key="runs_detected_only")
        else:
            c5.toggle("Test incorrect inferences too", key="runs_all")
        c5.number_input("Seed", 0, MAX_SEED, key="runs_seed")
        c4.number_input("Limit (0 = every sample)", 0, None, key="runs_limit")
        c5.selectbox("Runtime", RUNTIMES, key="runs_runtime",
                     help="What runs the model: torch, or the model exported once to ONNX and run by ONNX Runtime "
                          "or OpenVINO (same outputs within 1e-5). auto takes the fastest that matches torch "
                          "on this machine; the run's record says which one ran.")
        st.text_input("Name (optional)", key="runs_name")
        go = st.form_submit_button("Start run", type="primary", key="runs_start")
    if go:
        values = {name: st.session_state.get(key) for name, key in FIELD_KEYS.items()}
        values |= {"test_all": bool(values["test_all"]), "detected_only": bool(values["detected_only"])}
        form = RunForm(task=task, model=st.session_state[MODEL_KEYS[task]], **values)
        try:
            config = form.to_config(base)
            with st.spinner("Starting the run process ..."):
                job = jobs.start_web_run(actor, store, config)
            st.success(f"Run {job.run_id} started in its own process; its progress shows below.")
        except Exception as exc:  # shown to the user, the page stays up
            st.error(f"Could not start the run: {plain(exc)}")


def use_upload(up) -> None:
    """Put an upload into the start form (a callback: runs before the form's widgets are drawn)."""
    if up.kind == uploads.WEIGHTS:
        st.session_state[TASK_KEY] = CLASSIFIER
        st.session_state[MODEL_KEYS[CLASSIFIER]] = f"torchvision:{up.architecture}"
        st.session_state[FIELD_KEYS["weights"]] = str(up.weights)
    else:
        st.session_state[FIELD_KEYS["dataset"]] = str(up.annotation)
        st.session_state[FIELD_KEYS["images"]] = str(up.images)


def upload_section() -> None:
    """Upload a dataset (annotation .json + images .zip) or a state dict for a listed architecture."""
    mib = uploads.MIB
    st.caption(f"Files land in this store's uploads folder, one folder per name. Limits: annotation "
               f"{uploads.MAX_ANNOTATION_BYTES // mib} MiB; zip {uploads.MAX_ZIP_BYTES // mib} MiB, "
               f"{uploads.MAX_UNPACKED_BYTES // mib} MiB unpacked, {uploads.MAX_ZIP_MEMBERS} files, images only; "
               f"weights {uploads.MAX_WEIGHTS_BYTES // mib} MiB, a state dict (loaded without unpickling code).")
    kind = st.radio("Upload", ("Dataset", "Weights"), horizontal=True, key="runs_up_kind")
    name = st.text_input("Name (letters, digits, _ . -)", key="runs_up_name")
    if kind == "Dataset":
        ann = upload_box(actor, access.UPLOAD_DATA, "Annotations: COCO or manifest .json",
                         uploads.MAX_ANNOTATION_BYTES, type=["json"], key="runs_up_ann")
        zipped = upload_box(actor, access.UPLOAD_DATA, "Images: a .zip", uploads.MAX_ZIP_BYTES, type=["zip"],
                            key="runs_up_zip")
        if st.button("Upload dataset", key="runs_up_dataset_btn"):
            try:
                if ann is None or zipped is None:
                    raise ValueError("choose both the annotation .json and the images .zip")
                up = manage.upload_dataset(actor, store, name, ann, zipped)
                st.session_state[UPLOADED_KEY] = up.name
                unused = (up.n_unpacked or 0) - up.n_files
                st.success(f"Dataset {plain(up.name)} stored: {up.n_files} images, {up.n_samples} samples ({up.kind})"
                           + (f"; {unused} more images of the zip are named by no entry." if unused > 0 else "."))
            except Exception as exc:  # shown to the user, the page stays up
                st.error(f"Upload refused: {plain(exc)}")
    else:
        arch = st.selectbox("Architecture (torchvision)", uploads.WEIGHT_ARCHITECTURES, key="runs_up_arch")
        weights = upload_box(actor, access.UPLOAD_WEIGHTS, "Weights: a state dict (.pt, .pth)",
                             uploads.MAX_WEIGHTS_BYTES, type=["pt", "pth"], key="runs_up_weights")
        if st.button("Upload weights", key="runs_up_weights_btn"):
            try:
                if weights is None:
                    raise ValueError("choose a weights file")
                up = manage.upload_weights(actor, store, name, arch, weights)
                st.session_state[UPLOADED_KEY] = up.name
                st.success(f"Weights {plain(up.name)} stored for {plain(up.architecture)}.")
            except Exception as exc:  # shown to the user, the page stays up
                st.error(f"Upload refused: {plain(exc)}")
    stored = {u.name: u for u in manage.uploads(store)}
    just = st.session_state.pop(UPLOADED_KEY, None)
    if just in stored:
        st.session_state["runs_up_pick"] = just        # the picker shows what was just uploaded
    if stored:
        c1, c2 = st.columns([3, 1])
        pick = c1.selectbox("Uploaded", list(stored), key="runs_up_pick",
                            format_func=lambda n: f"{n} ({stored[n].kind}"
                                                  f"{', ' + stored[n].architecture if stored[n].architecture else ''})")
        c2.button("Use in the start form", key="runs_up_use", on_click=use_upload, args=(stored[pick],))


def manage_section() -> None:
    """Rename or delete a run (deleting asks for its id)."""
    keep_choice("runs_manage_pick", runs[-1].id, list(by_id))
    pick = st.selectbox("Run", list(by_id), format_func=lambda i: captions.run_label(by_id[i]),
                        key="runs_manage_pick")
    c1, c2 = st.columns(2)
    new_name = c1.text_input("New name", key="runs_rename_name")
    if c1.button("Rename", key="runs_rename_btn"):
        try:
            manage.rename_run(actor, store, pick, new_name)
            st.success(f"Run {pick} renamed.")
        except Exception as exc:  # shown to the user, the page stays up
            st.error(f"Could not rename run {pick}: {plain(exc)}")
    confirm = c2.text_input(f"Type {pick} to confirm deleting run {pick} with all its rows (judgments too)",
                            key="runs_delete_confirm")
    if c2.button("Delete run", key="runs_delete_btn"):
        try:
            gone = manage.delete_run(actor, store, pick, confirm=confirm)
            st.success(f"Run {pick} deleted ({sum(gone.values())} rows).")
        except Exception as exc:  # shown to the user, the page stays up
            st.error(f"Could not delete run {pick}: {plain(exc)}")


def issues_section() -> None:
    """Each run's skipped and untested samples with reasons, and annotations dropped from tested ones."""
    keep_choice("runs_issues_pick", runs[-1].id, list(by_id))
    pick = st.selectbox("Run", list(by_id), format_func=lambda i: captions.run_label(by_id[i]),
                        key="runs_issues_pick")
    total = sample_issue_total(store, pick)
    if not total:
        st.info("Every sample of this run was tested, with every annotation.")
        return
    pages = -(-total // ISSUES_PAGE_ROWS)
    page = 1
    if pages > 1:
        page = int(st.number_input(f"Page (of {pages}; {ISSUES_PAGE_ROWS} samples a page, {total} in all)",
                                   min_value=1, max_value=pages, value=1, step=1, key=f"runs_issues_page_{pick}"))
    rows = manage.sample_issues(store, pick, (page - 1) * ISSUES_PAGE_ROWS, ISSUES_PAGE_ROWS)
    frame(pd.DataFrame([asdict(r) for r in rows]), key="runs_issues_table")


def cancel_pressed(run_id: int) -> None:
    """The Cancel button's callback: the session and its roles are read again now (a callback runs before the
    page checks them), so a signed-out or revoked run operator cancels nothing."""
    try:
        jobs.cancel(current_actor(store), store, run_id)
        st.session_state[CANCEL_NOTE_KEY] = (True, f"Run {int(run_id)} will stop after its current chunk.")
    except NotAllowed as exc:
        st.session_state[CANCEL_NOTE_KEY] = (False, f"Run {int(run_id)} was not cancelled: {exc}")


@st.fragment(run_every=2)
def live():
    """The progress lines and the history, from one read of the runs per refresh: both show the same numbers.
    Each refresh reads the session again: once it has ended or lost its role, the whole page runs again (and
    shows no operator's button)."""
    if not same_actor(current_actor(store), actor):
        st.rerun()
    note = st.session_state.pop(CANCEL_NOTE_KEY, None)
    if note is not None:
        (st.success if note[0] else st.error)(captions.plain(note[1]))
    now = store.list_runs()
    if not now:
        st.info("No runs yet.")
        return
    for r in now:
        if not (jobs.is_active(r) or jobs.just_finished(r)):
            continue
        c1, c2 = st.columns([5, 1])
        c1.progress(jobs.progress_share(r), text=f"{captions.plain(captions.run_label(r))}: {jobs.progress_text(r)}")
        if operator and jobs.can_cancel(r):
            c2.button("Cancel", key=f"cancel_{r.id}", on_click=cancel_pressed, args=(r.id,))
    for t in runs_that_tested_nothing(store, now):
        st.warning(run_captions.nothing_tested_text(t), icon=":material/warning:")
    frame(run_history(now), key="runs_table")


def resume_section(stopped: dict) -> None:
    """Resume a stopped run (cancelled, failed, stalled or left pending) with its stored settings."""
    keep_choice("runs_resume_pick", next(iter(stopped)), list(stopped))
    pick = st.selectbox("Run", list(stopped), format_func=lambda i: captions.run_label(stopped[i]),
                        key="runs_resume_pick")
    if st.button("Resume", key="runs_resume_btn"):
        try:
            job = jobs.resume_web_run(actor, store, pick)
            st.success(f"Run {job.run_id} resumed in its own process; its progress shows below.")
        except Exception as exc:  # shown to the user, the page stays up
            st.error(f"Could not resume run {pick}: {plain(exc)}")


# The page's order: the actions that start work first (a run, the data it needs), then what is going on (live
# progress and the history), then what can be done to a run that exists (resume, rename, delete), then its details.
if operator:
    with st.expander("Start a run", expanded=not runs):
        start_form()
    with st.expander("Bring your own data"):
        upload_section()
else:
    st.info("Starting, cancelling and resuming runs is for run operators and admins: sign in (sidebar) with such "
            "an account.")

st.subheader("History")
live()

stopped = {r.id: r for r in jobs.resumable_runs(store)} if operator else {}
if stopped:
    st.subheader("Resume a stopped run")
    resume_section(stopped)
if operator and runs:
    with st.expander("Rename or delete a run"):
        manage_section()
if runs:
    st.subheader("Skipped and untested samples")
    issues_section()
