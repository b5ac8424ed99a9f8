"""Named thresholds and defaults, each with the effect of changing it.

Papers are cited by short names, with their sections, tables and equations:

- EMSE21: Tian et al., "To What Extent Do DNN-based Image Classification Models Make Unreliable
  Inferences?", Empirical Software Engineering 2021 (MR-1 / MR-2 for classifiers).
- DetReport: Tian, Li, Li, Cheung, "Automated Testing of DNN Models for Unreliable Inferences",
  technical report (the relations for object detectors).
- ORMR: Tian et al., "Testing Deep Learning Models for Image Analysis Using Object-Relevant
  Metamorphic Relations" (the wider mutation set, the relevancy scores, the Associated Object).
- DeepInspect: Tian, Zhong, Ordonez, Kaiser, Ray, "Testing DNN Image Classifiers for Confusion &
  Bias Errors", ICSE 2020.
"""

# What a run tests (``runs.task`` in the store): a single-label or a multi-label classifier, or a detector.
CLASSIFIER_TASKS = ("single", "multi")
DETECTION_TASK = "detection"

# Multi-label decision threshold: a label is predicted when p >= this (EMSE21 s2.2).
# Lower it and predicted label sets grow, so fewer inferences count as correct.
MULTI_LABEL_THRESHOLD = 0.5

# How many top labels each stored prediction keeps.  Single-label MR-1 needs the
# top two; more makes the export and the review page more informative.
TOP_K = 5

# Default vote: an inference is flagged when at least VOTE_K of VOTE_N mutations of
# one relation are violated (EMSE21 s4.4: 2 of 3 colours).
THREE_COLOUR_VOTE_K = 2
# The 15-colour palette needs 8 of 15 (EMSE21 s5.2.1).
PALETTE_VOTE_K = 8

# Pixels added around each box by the ImageNet/VOC loader; the seed code padded 5.
# Larger padding removes more context along with the object.
DEFAULT_BOX_PADDING = 0

# Kernel size of the median filter that blurs the object boundary in RmvObjByRGB
# and PsvObj (ORMR Table I).  Must be odd; larger blurs a wider band.
BOUNDARY_BLUR_KSIZE = 5
# Width in pixels of the band around the region boundary that gets blurred.
BOUNDARY_BAND = 3

# Inpainting radius for cv2.inpaint (RmvObjByTool).  Larger radius looks further
# into the background for each filled pixel and is slower.
INPAINT_RADIUS = 3
# Inpainting works on a copy scaled so its longer side is at most this many pixels,
# then the filled pixels are scaled back; keeps INPAINT_NS under ~50 ms per image.
INPAINT_MAX_SIDE = 512

# Default variance (in 0-255 pixel units squared) of background Gaussian noise.
DEFAULT_NOISE_VARIANCE = 2500.0

# Default ratio of the box that random erase removes, centre out (DetReport s2.3).
DEFAULT_ERASE_RATIO = 0.5

# Default number of images the engine sends through the model at once.
DEFAULT_BATCH_SIZE = 16

# What runs a model's forward pass (``objrel.models.runtimes``): torch itself, or the model exported once to
# ONNX and run by ONNX Runtime or OpenVINO (f32 forced).  ``auto`` takes the fastest runtime whose outputs
# match torch's, measured once per model on this machine and remembered beside the exported file.
AUTO_RUNTIME = "auto"
TORCH_RUNTIME = "torch"
ONNXRUNTIME = "onnxruntime"
OPENVINO = "openvino"
RUNTIMES = (AUTO_RUNTIME, TORCH_RUNTIME, ONNXRUNTIME, OPENVINO)

# Largest difference between an exported runtime's probabilities and torch's on the same images for the two to
# count as one model: ``objrel.models.runtimes`` refuses an exported model above it and ``auto`` never picks one.
# A faithful export differs by about 1e-6 (ONNX Runtime and OpenVINO on EfficientNet-Lite0 at most 4.3e-6 here).
RUNTIME_MATCH_TOLERANCE = 1e-5

# Margin within which a comparison that decides a verdict counts as "no change" (a tie): a label's probability
# against the top one, a certainty against the source's, a multi-label probability's move across the threshold,
# an IoU against Delta_c.  The papers' comparisons are strict (EMSE21 s4.4, DetReport s4.4); on a computer a
# mutant equal to its source gives certainties apart by float noise, which depends on the runtime and the batch
# size, so a strict comparison there is decided by rounding.  The largest such margin is a difference of two
# differences of probabilities (a certainty change), each probability within RUNTIME_MATCH_TOLERANCE of torch's
# on every accepted runtime: 4 times it.  Raise it and more small real changes count as none.
TIE_TOLERANCE = 4 * RUNTIME_MATCH_TOLERANCE

# Where a classifier's forward pass runs: the CPU, or a CUDA GPU (``cuda`` or ``cuda:N``; torch, or ONNX
# Runtime's CUDA provider; f32 forced: TF32 off).  Decoding and mutating stay on the CPU either way.
CPU_DEVICE = "cpu"
CUDA_DEVICE = "cuda"

# Images larger than this many pixels are refused as probable decompression bombs: by the upload check (from
# the header, before decoding) and by every run (objrel.data.images), so an upload never holds an image runs skip.
MAX_IMAGE_PIXELS = 89_478_485

# SQLite waits this many milliseconds for a lock before failing a write.
SQLITE_BUSY_TIMEOUT_MS = 30_000

# Database connections one process holds to its store at most (SQLAlchemy's pool).  The app's sessions each take
# one only while a query runs, so this many of them can query at the same moment; one more waits for a free
# connection (up to the pool's 30 s, then a write says the store is busy).  With PostgreSQL's default
# max_connections (100) it leaves room for the runs' and LIME's own processes.
STORE_POOL_SIZE = 48
# Of those, how many stay open between uses (the others close when given back), so an idle app keeps few.
STORE_POOL_KEPT = 8

# A target region must cover at least this many pixels to be tested.
MIN_REGION_PIXELS = 1

# Nesting depth (JSON arrays/objects, XML elements) a file objrel reads may reach.  Every format it reads needs
# fewer than 10 levels; deeper files are refused before parsing (Python's json recurses once per level).
MAX_NESTING_DEPTH = 64
# Largest annotation file (COCO or manifest JSON) objrel reads, in bytes; COCO's largest public file
# (train2017 instances) is 448 MB.  Uploads have their own, smaller limit (objrel.data.uploads).
MAX_ANNOTATION_FILE_BYTES = 2**30
# Largest VOC / ILSVRC XML file (the boxes of one image) objrel reads, in bytes.
MAX_XML_FILE_BYTES = 16 * 2**20
# Largest results file (DeepInspect results, shortcut-benchmark results) objrel reads, in bytes; a
# 1000-class DeepInspect result is about 40 MB.
MAX_RESULTS_FILE_BYTES = 2**30

# Environment variables that processes started by objrel (runs, LIME, served apps) inherit; named here, at the
# bottom of the stage order, so that whoever starts those processes can set them without loading the stage.
# Folder of exported networks and auto's runtime measurements (objrel.models.runtimes; default
# ~/.cache/objrel/models).
MODEL_CACHE_ENV = "OBJREL_MODEL_CACHE"
# Set to "0" to keep the app from starting LIME jobs ahead (objrel.review.lime_ahead): a server short of
# memory, or tests that open review samples by the hundred; the Review page then offers LIME on demand only.
LIME_AHEAD_ENV = "OBJREL_LIME_AHEAD"
