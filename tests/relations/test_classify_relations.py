"""A stored prediction reads back as it was made."""


def test_a_prediction_dict_holds_every_field_in_order_with_text_label_keys():
    """``to_dict`` is written out field by field (speed): it must stay what ``dataclasses.asdict`` gives, label keys
    as text, so stored predictions read back the same."""
    import dataclasses

    import numpy as np

    from objrel.relations.classify import Prediction

    p = Prediction.from_probs(np.random.default_rng(0).random(50), task="multi", interest=[3, 7], threshold=0.9)
    want = dataclasses.asdict(p)
    want["probs"] = {str(k): v for k, v in p.probs.items()}
    want["ranks"] = {str(k): v for k, v in p.ranks.items()}
    assert p.to_dict() == want and list(p.to_dict()) == [f.name for f in dataclasses.fields(Prediction)]
    assert Prediction.from_dict(p.to_dict()) == p
