"""Bring your own data: unpack, check and register uploaded datasets and weights under an uploads root.

A dataset upload is an annotation file (COCO ``.json`` or an objrel manifest ``.json``) plus a ``.zip`` of its
images; a weights upload is a state-dict file for a torchvision architecture from ``WEIGHT_ARCHITECTURES``.
Each lands in ``<root>/<name>/`` (``<name>.json`` + ``images/``, or ``weights.pt`` + ``upload.json``).

Nothing here trusts the upload: sizes are capped before anything is written (``MAX_*``); a zip is refused
when a member is absolute, climbs out with ``..``, is a symlink, when it has more than ``MAX_ZIP_MEMBERS``
files or declares more than ``MAX_UNPACKED_BYTES`` (and extraction stops if the real bytes exceed the declared
ones); every image must decode; the annotation file must load with objrel's own loader and give at least one
sample, and each of its image names must resolve to one image of the zip (by its path, or by its trailing
path components wherever the zip nests the images: ``objrel.data.locate``); weights load with
``torch.load(weights_only=True)`` (``objrel.models.safe_load``) and must fit the architecture.  Work
happens in a hidden folder beside the target and is renamed into place only when all checks pass, so a refused
upload leaves nothing behind.  The role check is the caller's (``objrel.engine.manage``); this module only knows files.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from PIL import Image, UnidentifiedImageError

from objrel.constants import MAX_IMAGE_PIXELS
from objrel.data.bounded import parse_json
from objrel.data.images import without_folder
from objrel.errors import InputFileError, ObjrelError

MIB = 2**20
# Largest annotation file accepted, in bytes.
MAX_ANNOTATION_BYTES = 64 * MIB
# Largest zip file accepted (compressed), in bytes.
MAX_ZIP_BYTES = 1024 * MIB
# Largest total of the zip's uncompressed members, in bytes (declared sizes and, while unpacking, real ones).
MAX_UNPACKED_BYTES = 4096 * MIB
# Most files a zip may hold.
MAX_ZIP_MEMBERS = 20_000
# A member may unpack to at most this many times its compressed size once it declares more than
# RATIO_CHECK_BYTES: photos barely compress (PNG and JPEG are compressed already), a zip bomb compresses ~1000x.
MAX_MEMBER_RATIO = 100
RATIO_CHECK_BYTES = MIB
# Largest weights file accepted, in bytes.
MAX_WEIGHTS_BYTES = 1024 * MIB
# Image files a dataset zip may contain; other files are refused (``IGNORED_*`` are skipped quietly).
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")
IGNORED_PREFIXES = ("__MACOSX/",)
# An upload's name: a folder name, no path.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# torchvision classification architectures a weights upload may be for (the web app lists them as models).
WEIGHT_ARCHITECTURES = ("resnet18", "resnet34", "resnet50", "mobilenet_v3_small", "mobilenet_v3_large",
                        "efficientnet_b0", "convnext_tiny")


def annotation_file(name: str) -> str:
    """The annotation file of upload ``name``: named after it, so runs on it carry the upload's name as their
    dataset (a run's dataset is its annotation file's stem; every upload called annotations.json would make
    unrelated uploads look like one dataset in comparisons)."""
    return f"{name}.json"
IMAGES_DIR = "images"
# How messages name the uploads root (a visitor never reads its server path).
UPLOADS_FOLDER = "the uploads folder"
WEIGHTS_FILE = "weights.pt"
SPOOLED_ZIP = "images.zip"   # the uploaded zip on disk while it is checked and unpacked (then removed)
INFO_FILE = "upload.json"
COCO, MANIFEST, WEIGHTS = "coco", "manifest", "weights"
COPY_CHUNK = MIB
# Names that resolve to no image a refusal shows (it counts them all).
SHOWN_UNRESOLVED = 5
# Sample problems that mean the annotation's image name picks no single file inside the upload.
UNRESOLVED_CODES = ("ambiguous-file", "path-escapes-root", "bad-path")


class UploadError(ObjrelError, ValueError):
    """An upload refused: what was expected and what came."""


@dataclass(frozen=True)
class Upload:
    name: str
    kind: str                   # coco | manifest | weights
    folder: Path
    annotation: Path | None     # the dataset's annotation file
    images: Path | None         # the dataset's images folder
    weights: Path | None        # the weights file
    architecture: str | None    # torchvision architecture of the weights
    n_files: int                # images the annotation names that resolve to a file, or 1 for weights
    n_samples: int | None       # samples the loader found
    n_unpacked: int | None = None   # images the zip held (some may be named by no annotation)


def check_name(name: str) -> str:
    """``name`` stripped, or UploadError unless it is 1-64 safe characters starting with a letter or digit."""
    name = (name or "").strip()
    if not NAME_PATTERN.match(name) or name in {".", ".."}:
        raise UploadError(f"an upload name is 1-64 letters, digits, '_', '.' or '-' starting with a letter or "
                          f"digit; got {name!r}")
    return name


def _check_size(what: str, data: bytes | bytearray, limit: int) -> None:
    if len(data) > limit:
        raise UploadError(f"the {what} is {len(data) / MIB:.1f} MiB; at most {limit / MIB:.0f} MiB is accepted")
    if not data:
        raise UploadError(f"the {what} is empty (0 bytes)")


def spool(source, dest: Path, what: str, limit: int) -> Path:
    """Write ``source`` (bytes, or a binary file object such as Streamlit's upload) to ``dest`` in chunks of
    ``COPY_CHUNK``, refusing it (UploadError) once it passes ``limit`` bytes or when it is empty; returns
    ``dest``.  A file object is copied without a second copy of it in memory."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        _check_size(what, bytes(source) if isinstance(source, memoryview) else source, limit)
        dest.write_bytes(source)
        return dest
    if getattr(source, "seekable", lambda: False)():
        source.seek(0)
    written = 0
    with open(dest, "xb") as fh:
        while chunk := source.read(COPY_CHUNK):
            written += len(chunk)
            if written > limit:
                raise UploadError(f"the {what} is over {limit / MIB:.0f} MiB; at most {limit / MIB:.0f} MiB is "
                                  "accepted")
            fh.write(chunk)
    if not written:
        raise UploadError(f"the {what} is empty (0 bytes)")
    return dest


def _read_small(source, what: str, limit: int) -> bytes:
    """``source`` (bytes or a binary file object) as bytes, refused above ``limit`` before more is read."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        if hasattr(source, "seek"):
            source.seek(0)
        data = source.read(limit + 1)
    _check_size(what, data, limit)
    return data


def _member_path(info: zipfile.ZipInfo, target: Path) -> Path | None:
    """Where ``info`` unpacks inside ``target`` (None: skipped quietly); UploadError for a member that would
    land outside it, a symlink or a file that is not an image."""
    raw = info.filename
    if raw.startswith(IGNORED_PREFIXES):
        return None
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise UploadError(f"zip member {raw!r} is a symbolic link; expected plain image files only")
    pure = PurePosixPath(raw.replace("\\", "/"))
    if raw.startswith(("/", "\\")) or pure.is_absolute() or re.match(r"^[A-Za-z]:", raw):
        raise UploadError(f"zip member {raw!r} has an absolute path; expected paths relative to the zip's root")
    if ".." in pure.parts:
        raise UploadError(f"zip member {raw!r} climbs out of the folder with '..'; expected paths inside it")
    if info.is_dir():
        return None
    if pure.name.startswith("."):
        return None
    dest = (target / Path(*pure.parts)).resolve()
    if target.resolve() not in dest.parents:
        raise UploadError(f"zip member {raw!r} would be written outside the upload folder; refused")
    if pure.suffix.lower() not in IMAGE_SUFFIXES:
        raise UploadError(f"zip member {raw!r} is not an image; expected files ending in {', '.join(IMAGE_SUFFIXES)}")
    return dest


def unpack_images(zip_source, target: Path) -> list[Path]:
    """Unpack the images of a zip (its bytes, or the path of a zip already spooled to disk) into ``target``
    after checking every member; returns the files.

    Checks, before writing anything: the zip's own size, member count, declared total size, and each member's
    path (``_member_path``).  While writing, the real bytes are counted against the declared limit."""
    if isinstance(zip_source, (bytes, bytearray)):
        _check_size("images zip", zip_source, MAX_ZIP_BYTES)
        zip_source = io.BytesIO(zip_source)
    elif Path(zip_source).stat().st_size > MAX_ZIP_BYTES:
        raise UploadError(f"the images zip is {Path(zip_source).stat().st_size / MIB:.1f} MiB; at most "
                          f"{MAX_ZIP_BYTES / MIB:.0f} MiB is accepted")
    try:
        zf = zipfile.ZipFile(zip_source)
    except zipfile.BadZipFile as exc:
        raise UploadError(f"the images file is not a zip archive ({exc})") from exc
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_ZIP_MEMBERS:
            raise UploadError(f"the zip holds {len(infos)} entries; at most {MAX_ZIP_MEMBERS} are accepted")
        declared = sum(i.file_size for i in infos)
        if declared > MAX_UNPACKED_BYTES:
            raise UploadError(f"the zip's members declare {declared:,} bytes unpacked; at most {MAX_UNPACKED_BYTES:,} "
                              f"({MAX_UNPACKED_BYTES / MIB:.0f} MiB) are accepted")
        plan = [(i, d) for i in infos if (d := _member_path(i, target)) is not None]
        if not plan:
            raise UploadError("the zip holds no image files; expected images ending in " + ", ".join(IMAGE_SUFFIXES))
        for info, _ in plan:
            if info.file_size > RATIO_CHECK_BYTES and info.file_size > MAX_MEMBER_RATIO * max(info.compress_size, 1):
                raise UploadError(f"zip member {info.filename!r} unpacks to {info.file_size / MIB:.0f} MiB from "
                                  f"{info.compress_size / MIB:.2f} MiB, more than {MAX_MEMBER_RATIO}x; images do not "
                                  "compress like that, a zip bomb does")
        written = 0
        out = []
        for info, dest in plan:
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                with zf.open(info) as src, open(dest, "xb") as fh:
                    while chunk := src.read(COPY_CHUNK):
                        written += len(chunk)
                        if written > MAX_UNPACKED_BYTES:
                            raise UploadError(f"the zip unpacks to more than {MAX_UNPACKED_BYTES / MIB:.0f} MiB "
                                              f"(more than its members declare); refused")
                        fh.write(chunk)
            except (zipfile.BadZipFile, zlib.error, EOFError) as exc:   # a damaged member, or sizes that lie
                raise UploadError(f"zip member {info.filename!r} is damaged: {exc}") from exc
            except OSError as exc:   # the disk is full, or the server's file-size limit was reached
                raise UploadError(f"zip member {info.filename!r} could not be unpacked on the server "
                                  f"({exc.strerror or type(exc).__name__}); refused") from exc
            out.append(dest)
    return out


def check_images(files: list[Path], root: Path) -> None:
    """Every file must be an image of at most ``MAX_IMAGE_PIXELS`` pixels (the limit every run decodes
    within, ``objrel.data.images``) and decode.  All sizes are read from the headers first (PIL opens
    lazily), so an archive with an oversized image is refused before any pixel is decoded."""
    for f in files:
        try:
            with Image.open(f) as im:
                width, height = im.size
        except Image.DecompressionBombError as exc:
            raise UploadError(f"{f.relative_to(root)} has more than twice {MAX_IMAGE_PIXELS} pixels; at most "
                              f"{MAX_IMAGE_PIXELS} pixels are accepted") from exc
        except (UnidentifiedImageError, OSError, ValueError) as exc:
            raise UploadError(f"{f.relative_to(root)} does not decode as an image ({type(exc).__name__})") from exc
        if width * height > MAX_IMAGE_PIXELS:
            raise UploadError(f"{f.relative_to(root)} is {width}x{height} = {width * height} pixels; at most "
                              f"{MAX_IMAGE_PIXELS} pixels are accepted")
    for f in files:
        try:
            with Image.open(f) as im:
                im.load()
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
            raise UploadError(f"{f.relative_to(root)} does not decode as an image ({type(exc).__name__}: "
                              f"{without_folder(str(exc), f.parent)})") from exc


def annotation_kind(data) -> str:
    """COCO (a dict with images, annotations and categories) or a manifest (a list of entries, or a dict with
    ``images`` whose entries have a ``path``)."""
    if isinstance(data, dict) and {"images", "annotations", "categories"} <= set(data):
        return COCO
    entries = data if isinstance(data, list) else data.get("images") if isinstance(data, dict) else None
    if isinstance(entries, list) and all(isinstance(e, dict) and "path" in e for e in entries):
        return MANIFEST
    raise UploadError("the annotation file is neither COCO (a JSON object with 'images', 'annotations' and "
                      "'categories') nor an objrel manifest (a list of {'path': ..., 'objects': [...]} entries)")


def _named(message: str, names: dict[Path, str]) -> str:
    """``message`` with every path of ``names`` (as given and resolved; the longest first, so a file inside a
    folder is named before the folder) replaced by the name a visitor knows it by: no server path is shown."""
    pairs = {str(p): n for p, n in names.items()} | {str(Path(p).resolve()): n for p, n in names.items()}
    for path in sorted(pairs, key=len, reverse=True):
        message = message.replace(path, pairs[path])
    return message


def _staging(root: Path, name: str) -> tuple[Path, Path]:
    root.mkdir(parents=True, exist_ok=True)
    final = root / name
    if final.exists():
        raise UploadError(f"an upload named {name!r} already exists in the uploads folder; choose another name")
    return Path(tempfile.mkdtemp(prefix=f".incoming-{name}-", dir=root)), final


def _commit(staging: Path, final: Path, info: dict) -> None:
    (staging / INFO_FILE).write_text(json.dumps(info, indent=1))
    try:
        staging.rename(final)
    except OSError as exc:
        raise UploadError(f"an upload named {final.name!r} appeared meanwhile; choose another name") from exc


def add_dataset(root: str | Path, name: str, annotation, images_zip) -> Upload:
    """Check and register a dataset upload in ``<root>/<name>/``; UploadError says what was refused.

    ``annotation`` and ``images_zip`` are bytes or binary file objects (Streamlit's uploads): the zip is
    spooled to the staging folder in chunks and unpacked from there, never held twice in memory."""
    from objrel.data.coco import load_coco
    from objrel.data.manifest import load_manifest

    name = check_name(name)
    annotation_bytes = _read_small(annotation, "annotation file", MAX_ANNOTATION_BYTES)
    try:
        kind = annotation_kind(parse_json(annotation_bytes, "the annotation file", MAX_ANNOTATION_BYTES))
    except InputFileError as exc:
        raise UploadError(str(exc)) from exc
    root = Path(root).resolve()
    staging, final = _staging(root, name)
    try:
        spooled = spool(images_zip, staging / SPOOLED_ZIP, "images zip", MAX_ZIP_BYTES)
        files = unpack_images(spooled, staging / IMAGES_DIR)
        spooled.unlink()
        check_images(files, staging / IMAGES_DIR)
        ann = staging / annotation_file(name)
        ann.write_bytes(annotation_bytes)
        try:
            loader = load_coco if kind == COCO else load_manifest
            dataset = loader(ann, staging / IMAGES_DIR, name=name)
        except ObjrelError as exc:
            # The loader names the file by its server path; the visitor sees the upload's own names.
            shown = _named(str(exc), {ann: annotation_file(name), staging: name, root: UPLOADS_FOLDER})
            raise UploadError(f"the {kind} annotation file does not load: {shown}") from exc
        n = len(dataset.samples)
        if not n:
            raise UploadError(f"the {kind} annotation file gives no samples; expected at least one image entry")
        found = resolved_images(dataset.samples, kind, files, staging / IMAGES_DIR)
        _commit(staging, final, {"kind": kind, "files": found, "unpacked": len(files), "samples": n})
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Upload(name, kind, final, final / annotation_file(name), final / IMAGES_DIR, None, None, found, n,
                  len(files))


def resolved_images(samples, kind: str, files: list[Path], images: Path) -> int:
    """How many distinct images of the zip the samples name (the loaders look a name with no file there up by
    its trailing components, ``objrel.data.locate``); UploadError naming (up to ``SHOWN_UNRESOLVED`` of) the
    names that resolve to no image, or to several, and how many there are, so nothing is stored that a run
    would skip as missing."""
    found, bad = set(), []
    for s in samples:
        code = s.problem[0] if s.problem else None
        if code in UNRESOLVED_CODES:
            reason = s.problem[1].removeprefix(f"image name {s.rel_path!r} ").split("; expected")[0]
            bad.append(f"{s.rel_path!r} ({reason})")
        elif s.image_path and Path(s.image_path).is_file():
            found.add(s.image_path)
        else:
            bad.append(f"{s.rel_path!r}")
    if bad:
        shown = ", ".join(bad[:SHOWN_UNRESOLVED]) + (f" and {len(bad) - SHOWN_UNRESOLVED} more"
                                                     if len(bad) > SHOWN_UNRESOLVED else "")
        example = files[0].relative_to(images).as_posix() if files else "-"
        raise UploadError(f"{len(bad)} of {len(samples)} image names in the {kind} annotation file do not resolve "
                          f"to one image of the zip: {shown}; the zip holds {len(files)} images (for example "
                          f"{example!r}); expected each name to match one image by its path or file name")
    return len(found)


def add_weights(root: str | Path, name: str, architecture: str, weights, check: Callable[[Path, str], None]) -> Upload:
    """Check and register a state-dict upload for ``architecture`` in ``<root>/<name>/weights.pt``: it must
    load with ``weights_only=True`` and fit the architecture's ImageNet head.  ``weights``: bytes or a binary
    file object, spooled to disk in chunks.  ``check(path, architecture)`` loads the spooled file into the
    architecture and raises ObjrelError (or FileNotFoundError) where it does not fit: the models stage's
    ``objrel.models.torchvision.check_weights_file`` (models sit above data, so the caller hands it in)."""
    name = check_name(name)
    if architecture not in WEIGHT_ARCHITECTURES:
        raise UploadError(f"the architecture must be one of {', '.join(WEIGHT_ARCHITECTURES)}; got {architecture!r}")
    root = Path(root).resolve()
    staging, final = _staging(root, name)
    try:
        path = spool(weights, staging / WEIGHTS_FILE, "weights file", MAX_WEIGHTS_BYTES)
        try:
            check(path, architecture)
        except (ObjrelError, FileNotFoundError) as exc:
            shown = _named(str(exc), {path: WEIGHTS_FILE, staging: name, root: UPLOADS_FOLDER})
            raise UploadError(f"the weights file is refused: {shown}") from exc
        _commit(staging, final, {"kind": WEIGHTS, "architecture": architecture, "files": 1})
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Upload(name, WEIGHTS, final, None, None, final / WEIGHTS_FILE, architecture, 1, None)


def list_uploads(root: str | Path) -> list[Upload]:
    """The registered uploads under ``root`` (folders with an ``upload.json``), by name."""
    root = Path(root)
    out: list[Upload] = []
    if not root.is_dir():
        return out
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        try:
            info = json.loads((folder / INFO_FILE).read_text())
        except (OSError, json.JSONDecodeError):
            continue
        kind = info.get("kind")
        weights = kind == WEIGHTS
        out.append(Upload(folder.name, kind, folder.resolve(),
                          None if weights else (folder / annotation_file(folder.name)).resolve(),
                          None if weights else (folder / IMAGES_DIR).resolve(),
                          (folder / WEIGHTS_FILE).resolve() if weights else None,
                          info.get("architecture"), int(info.get("files") or 0), info.get("samples"),
                          info.get("unpacked")))
    return out
