"""objrel.review.settings: a reviewer's own settings, kept as JSON with the account (revision 0007)."""

from __future__ import annotations

import pytest

from objrel import review
from objrel.access import ANONYMOUS
from objrel.review.roles import actor_of
from objrel.review.settings import LIME_AFTER_CALL, my_settings, set_my_setting
from objrel.store import accounts as account_rows


@pytest.fixture(autouse=True)
def fast_hash(monkeypatch):
    monkeypatch.setattr(review.accounts, "SCRYPT_N", 2**10)


def test_the_lime_setting_is_off_until_the_reviewer_turns_it_on(store):
    review.create_reviewer(store, "alice", "alice-passphrase", roles=[review.REVIEWER])
    review.create_reviewer(store, "bob", "bob-passphrase", roles=[review.REVIEWER])
    alice = actor_of(store, "alice")
    assert my_settings(alice, store)[LIME_AFTER_CALL] is False
    assert set_my_setting(alice, store, LIME_AFTER_CALL, True)[LIME_AFTER_CALL] is True
    assert my_settings(alice, store)[LIME_AFTER_CALL] is True
    assert my_settings(actor_of(store, "bob"), store)[LIME_AFTER_CALL] is False      # one account's only
    assert account_rows.settings(store, "alice") == {LIME_AFTER_CALL: True}


def test_settings_refuse_unknown_keys_wrong_types_and_visitors(store):
    review.create_reviewer(store, "alice", "alice-passphrase", roles=[review.REVIEWER])
    alice = actor_of(store, "alice")
    with pytest.raises(ValueError, match="setting must be one of"):
        set_my_setting(alice, store, "colour", "red")
    with pytest.raises(ValueError, match="takes a bool"):
        set_my_setting(alice, store, LIME_AFTER_CALL, "yes")
    with pytest.raises(ValueError, match="nobody is signed in"):
        my_settings(ANONYMOUS, store)
    with pytest.raises(KeyError):
        account_rows.set_setting(store, "nobody", LIME_AFTER_CALL, True)


def test_only_a_reviewer_changes_their_review_settings(store):
    from objrel.errors import NotAllowed

    review.create_reviewer(store, "carol", "carol-passphrase", roles=[review.ADJUDICATOR])
    with pytest.raises(NotAllowed):
        set_my_setting(actor_of(store, "carol"), store, LIME_AFTER_CALL, True)
    assert account_rows.settings(store, "carol") == {}
