"""What pyproject.toml cannot say: assets/ (the demo photos and annotations, the background pictures) is
installed inside the package as ``objrel/assets``, so that an installed objrel runs its demo
(``objrel.data.bundled`` looks there first, then beside the package in a checkout)."""

from setuptools import find_packages, setup

ASSETS_PACKAGE = "objrel.assets"

setup(
    packages=find_packages(include=["objrel", "objrel.*"]) + [ASSETS_PACKAGE],
    package_dir={ASSETS_PACKAGE: "assets"},
    package_data={ASSETS_PACKAGE: ["**/*"]},
)
