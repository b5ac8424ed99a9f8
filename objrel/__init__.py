"""objrel: test image models with object-relevant metamorphic relations.

MR-1 corrupts the target object and expects the prediction to change or lose
certainty; MR-2 corrupts everything but the object and expects the prediction
to stay.  Inferences that break these relations are flagged as unreliable.

The package is organised in stages along the data flow, each importing only
stages before it (``objrel.stages`` says which): the bottom modules (errors,
constants, the access gate) -> ``data`` -> ``mutations`` -> ``models`` ->
``relations`` -> ``store`` -> ``engine`` -> ``review`` -> ``analysis`` ->
``studies`` -> ``cli`` and ``app`` (the Streamlit helpers the pages use).
"""

__version__ = "0.1.0"
