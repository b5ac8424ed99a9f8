"""The planted-shortcut benchmark: ground truth for objrel's own relations, and the loop they close.

* ``models``:      a small CNN, training, state dict + JSON config, loading as a ``TorchClassifier``;
* ``groundtruth``: counterfactual scenes decide which correct inferences (and detection units) rely on the background;
* ``planted``:     ``PlantedDetector``, a rule-based stand-in detector whose reliance is known by construction;
* ``scoring``:     precision / recall of every vote group against it, with Wilson intervals;
* ``repair``:      retraining on violating mutants with a search over their share (DetReport s4.5);
* ``attack``:      relevancy-guided vs random transplanting (ORMR s VIII);
* ``config``:      ``BenchConfig``, the benchmark's sizes (full and quick);
* ``arms``:        what each seed runs (both models, repair, attack, the multi-label and detection arms);
* ``results``:     the arms' typed results and the results file (``results.json``) they are written to;
* ``tables`` / ``report``: the tables read from a results file, and the text report of them;
* ``bench``:       ``objrel bench shortcut``, which runs all of it on ``objrel.studies.shortcut.scenes`` scenes.

Import the submodules directly (``from objrel.studies.shortcut.groundtruth import ground_truth``): importing
this package loads nothing heavy.
"""
