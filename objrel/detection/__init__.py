"""Object detectors: adapters, the Associated Object, detection relations, runs and sweeps.

Seed 001 (test T, MR-1 / MR-2 for detectors, random erase and Gaussian noise, missing vs
incorrect detections) and seed 002 s V-B (detection records, the Associated Object,
IoU-based distances and scores), through the classifier engine's store and app.
"""

from .adapters import (DETECTION_TASK, CallableDetector, CombinedDetector, Detector, as_detections,
                       detector_choices, load_detector)
from .config import DETECTION_PRESETS, SEED001, DetectionConfig, detection_plan
from .engine import DetectionEngine, image_of, is_detection_run, resume_detection, run_detection, unit_id
from .matching import (Association, RecordMatch, Unit, associated_objects, detection_units, iou, iou_matrix,
                       match_record)
from .records import Detections
from .regions import DEMO_FACES, detector_regions, image_folder, load_demo_faces, load_detection_dataset
from .relations import (DEFAULT_IOU_THRESHOLD, INCORRECT_DETECTION, MISSING_DETECTION, DetectionCheck, check,
                        check_mr1, check_mr2, distance_preserving, distance_removing, iou_test)

__all__ = [
    "DETECTION_TASK", "Detector", "CallableDetector", "CombinedDetector", "as_detections", "load_detector",
    "detector_choices", "Detections", "DetectionConfig", "detection_plan", "DETECTION_PRESETS", "SEED001",
    "DetectionEngine", "run_detection", "resume_detection", "is_detection_run", "unit_id", "image_of",
    "iou", "iou_matrix", "Association", "associated_objects", "RecordMatch", "match_record", "Unit",
    "detection_units", "DEFAULT_IOU_THRESHOLD", "MISSING_DETECTION", "INCORRECT_DETECTION", "DetectionCheck",
    "check", "check_mr1", "check_mr2", "iou_test", "distance_preserving", "distance_removing",
    "DEMO_FACES", "load_demo_faces", "load_detection_dataset", "image_folder", "detector_regions",
]
