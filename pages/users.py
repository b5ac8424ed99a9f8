"""Users: admins invite accounts, grant and revoke roles, register models for the Runs page, and mark gold items.

Every change goes through objrel.review (``invite``, ``grant_roles``, ``revoke_role``) and
objrel.engine.run_form (``allow_model``), which check the signed-in account's admin role themselves.  A change
of someone's roles ends their signed-in sessions (objrel.review.roles); the message says so.
"""

import streamlit as st

from objrel import access, review
from objrel.app import threads
from objrel.app.caches import open_store
from objrel.app.teams_panel import teams_section
from objrel.app.text import plain
from objrel.app.widgets import page_sidebar, use_app_navigation
from objrel.engine.run_form import TASK_LABELS, TASKS, allow_model, web_models
from objrel.errors import ConfigError, NotAllowed

use_app_navigation()

FLASH_KEY = "users_flash"

store = open_store()
actor = page_sidebar(store)
st.title("Users")
if FLASH_KEY in st.session_state:
    st.success(st.session_state.pop(FLASH_KEY))
if not access.permits(actor, access.INVITE):
    st.info("Accounts and roles are managed by admins: sign in (sidebar) with an admin account. The server's "
            "operator makes the first one with `objrel users add NAME --role admin`.")
    st.stop()


def done(message: str) -> None:
    st.session_state[FLASH_KEY] = message
    st.rerun()


accounts = review.list_accounts(store)
st.dataframe([{"name": a["name"], "sign-in": a["kind"], "roles": ", ".join(a["roles"]) or "(none)"}
              for a in accounts], hide_index=True, key="users_table")

st.subheader("Invite someone")
with st.form("users_invite", clear_on_submit=True):
    c1, c2, c3 = st.columns([2, 2, 3])
    name = c1.text_input("Name", key="users_new_name", help="2-40 ASCII letters, digits, . _ - @ and inner spaces")
    passphrase = c2.text_input("First passphrase", type="password", key="users_new_pass",
                               help=f"at least {review.MIN_PASSPHRASE_LENGTH} characters; give it to them privately")
    roles = c3.multiselect("Roles", review.ROLES, default=[review.REVIEWER], key="users_new_roles",
                           format_func=review.ROLE_LABELS.get)
    invited = st.form_submit_button("Invite", key="users_invite_btn")
if invited:
    try:
        account = review.invite(actor, store, name, passphrase, roles)
    except (ValueError, NotAllowed) as exc:
        st.error(plain(exc))
    else:
        done(f"Invited {plain(account.name)} ({', '.join(review.roles_of(store, account.name))}).")

st.subheader("Change roles")
names = [a["name"] for a in accounts]
with st.form("users_roles"):
    c1, c2, c3 = st.columns([2, 2, 1])
    target = c1.selectbox("Account", names, key="users_target")
    role = c2.selectbox("Role", review.ROLES, key="users_role", format_func=review.ROLE_LABELS.get)
    action = c3.radio("Action", ["grant", "revoke"], key="users_action", horizontal=True)
    changed = st.form_submit_button("Apply", key="users_roles_btn")
if changed:
    before, open_sessions = review.roles_of(store, target), review.live_sessions(store, target)
    try:
        now = (review.grant_roles(actor, store, target, role) if action == "grant"
               else review.revoke_role(actor, store, target, role))
    except (ValueError, KeyError, NotAllowed) as exc:
        st.error(plain(exc))
    else:
        ended = ""
        if now != before and open_sessions:  # a change of roles ends the account's sessions (review.roles)
            ended = (" You are signed out: sign in again to act with your new roles." if target == actor.name else
                     f" Their {open_sessions} signed-in session{'s' if open_sessions > 1 else ''} ended: "
                     "they sign in again to act with the new roles.")
        done(f"{plain(target)}: {', '.join(now) or 'no role'}.{ended}")

st.subheader("Models the Runs page offers")
with st.form("users_models"):
    c1, c2 = st.columns([1, 3])
    task = c1.radio("Task", TASKS, key="users_model_task", format_func=TASK_LABELS.get)
    model = c2.text_input("Model name (a zoo name or detector spec; never py: code or a path)", key="users_model")
    added = st.form_submit_button("Register", key="users_model_btn")
if added:
    try:
        allow_model(actor, store, task, model)
    except (ConfigError, NotAllowed) as exc:
        st.error(plain(exc))
    else:
        done(f"Registered {plain(model.strip())} for {TASK_LABELS[task].lower()} runs.")
for t in TASKS:
    st.text(f"{TASK_LABELS[t]}: {', '.join(web_models(store, t))}")

threads.gold_section(actor, store)      # gold items with their known calls, each reviewer's accuracy on them
teams_section(actor, store)             # k reviewers per item, who judges which, each reviewer's workload
