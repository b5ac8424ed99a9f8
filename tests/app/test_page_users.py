"""AppTest of the Users page and the app shell: admins invite and grant, everyone else is refused, and the
page icon is served locally."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from objrel import review as R
from objrel.store import Store

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "users.py")


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


@pytest.fixture
def store(tmp_path, monkeypatch):
    s = Store(tmp_path / "users.db")
    R.create_reviewer(s, "root", "root-passphrase", roles=[R.ADMIN])
    R.create_reviewer(s, "alice", "alice-passphrase", roles=[R.REVIEWER])
    monkeypatch.setenv("OBJREL_STORE", s.url)
    return s


def open_page(who: str | None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    if who:
        at.session_state["reviewer"] = who
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("who", [None, "alice"])
def test_non_admins_get_no_forms(store, who):
    at = open_page(who)
    assert any("managed by admins" in i.value for i in at.info)
    assert not [b for b in at.button if b.key and b.key.startswith("users_")]


def test_an_admin_invites_with_roles_and_grants(store):
    at = open_page("root")
    at.text_input(key="users_new_name").set_value("carol")
    at.text_input(key="users_new_pass").set_value("carol-passphrase")
    at.multiselect(key="users_new_roles").set_value([R.ADJUDICATOR])
    at.button(key="users_invite_btn").click().run()
    assert not at.exception
    assert R.roles_of(store, "carol") == ("adjudicator",)
    assert any("Invited carol (adjudicator)" in s.value for s in at.success)
    assert R.verify_reviewer(store, "carol", "carol-passphrase").ok
    at.selectbox(key="users_target").set_value("alice")
    at.selectbox(key="users_role").set_value(R.RUN_OPERATOR)
    at.button(key="users_roles_btn").click().run()
    assert R.roles_of(store, "alice") == ("reviewer", "run-operator")
    # a look-alike name is refused with the reason
    at.text_input(key="users_new_name").set_value("\u0430lice")
    at.text_input(key="users_new_pass").set_value("mallory-passphrase")
    at.button(key="users_invite_btn").click().run()
    assert any("CYRILLIC SMALL LETTER A" in e.value for e in at.error)
    assert sorted(R.reviewer_names(store)) == ["alice", "carol", "root"]


def test_an_admin_registers_a_model_but_never_code(store):
    at = open_page("root")
    at.text_input(key="users_model").set_value("py:os:system")
    at.button(key="users_model_btn").click().run()
    assert any("never code" in e.value for e in at.error)
    at.text_input(key="users_model").set_value("torchvision:resnet18")
    at.button(key="users_model_btn").click().run()
    assert any("torchvision:resnet18" in t.value for t in at.text)


def test_the_page_icon_is_a_local_image():
    from objrel.app.icon import ICON_SIDE, page_icon

    source = (ROOT / "app.py").read_text()
    assert "page_icon=page_icon()" in source and "page_icon=\":" not in source
    im = page_icon()
    assert isinstance(im, Image.Image) and im.size == (ICON_SIDE, ICON_SIDE)
    assert '"pages/users.py"' in source


def test_sign_in_box_has_no_self_sign_up_and_reports_throttling(store):
    at = AppTest.from_file(str(ROOT / "pages" / "review.py"), default_timeout=60).run()
    assert not [r for r in at.radio if r.key == "signin_mode"]   # accounts come from admins only
    for _ in range(R.accounts.THROTTLE_AFTER_FAILURES):
        at.text_input(key="signin_name").set_value("alice")
        at.text_input(key="signin_pass").set_value("wrong guess")
        at.button(key="signin_submit").click().run()
        assert any("wrong passphrase" in e.value for e in at.error)
    at.text_input(key="signin_pass").set_value("alice-passphrase")
    at.button(key="signin_submit").click().run()
    assert any("try again in" in e.value for e in at.error)
    assert "reviewer" not in at.session_state
