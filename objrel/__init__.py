"""objrel: test image models with object-relevant metamorphic relations.

MR-1 corrupts the target object and expects the prediction to change or lose
certainty; MR-2 corrupts everything but the object and expects the prediction
to stay.  Inferences that break these relations are flagged as unreliable.

The package is organised along the data flow (see README, "Architecture"):
``data`` -> ``mutations`` -> ``models`` -> ``relations`` -> ``engine`` ->
``store`` -> ``stats`` / ``export`` -> ``cli`` and the Streamlit pages.
"""

__version__ = "0.1.0"
