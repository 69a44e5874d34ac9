"""Hydra override strings are taken apart in one place (train/verl_backend/override_syntax.py)."""

from dhpo_suite.train.verl_backend.launch import _merge_user_overrides
from dhpo_suite.train.verl_backend.override_syntax import override_keys, override_value, split_override


def test_prefix_key_and_value():
    assert split_override("++a.b=1=2") == ("++", "a.b", "1=2")  # the value keeps its own '='
    assert split_override("~trainer.logger") == ("~", "trainer.logger", "")
    assert override_keys(["+x=1", "y=[a,b]", "~z"]) == {"x", "y", "z"}
    assert override_value(["x=1", "+x=2", "y=3"], "x") == "2" and override_value(["y=3"], "x") is None


def test_a_users_plus_on_a_generated_key_becomes_a_plain_override():
    """Hydra refuses `+key=v` for a key that is already set; `++key=v` and `~key` are left as typed."""
    merged = _merge_user_overrides(["+a.b=1", "c=2"], ["+a.b=3", "++c=4", "+d=5", "~a.b"])
    assert merged == ["+a.b=1", "c=2", "a.b=3", "++c=4", "+d=5", "~a.b"]
