#!/usr/bin/python3
"""The winget (schema 1.6: version, installer, defaultLocale) and Scoop manifests of a Windows
release, from the project's version and the ZIP's SHA256. Run by build-windows-installer.sh:

    gen-manifests.py --build-dir build-windows [--url-base URL] [--out DIR]

The version is project(VERSION), as the Windows build's configure step wrote it
(<build-dir>/packaging/version.txt); the ZIP is <build-dir>/ddp-launch-<version>-win64.zip, CPack's.
Both package managers install the ZIP as a portable app (winget: a zip with a portable nested
installer; Scoop: `bin`), ddp-launch.exe at its top. --url-base is where a release publishes the
ZIP ({version} is filled in). Writes <out>/winget/ddp-launch.ddp-launch{,.installer,.locale.en-US}.yaml
and <out>/scoop/ddp-launch.json; prints their paths.
"""
import argparse
import hashlib
import json
import os
import sys

import yaml

PACKAGE_ID = "ddp-launch.ddp-launch"
NAME = "ddp-launch"
HOMEPAGE = os.environ.get("DDP_HOMEPAGE", "https://github.com/ddp-launch/ddp-launch")
DEFAULT_URL_BASE = os.environ.get("DDP_RELEASE_URL_BASE", HOMEPAGE + "/releases/download/v{version}")
DESCRIPTION = "launcher and job daemon for PyTorch DistributedDataParallel training"
LICENSE = "BSD-3-Clause"
MANIFEST_VERSION = "1.6.0"
SCHEMA = "https://aka.ms/winget-manifest.{kind}.1.6.0.schema.json"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_yaml(path, kind, doc):
    with open(path, "w", encoding="utf-8") as f:
        # The schema comment winget-pkgs' own manifests start with (editors validate against it).
        f.write(f"# yaml-language-server: $schema={SCHEMA.format(kind=kind)}\n")
        yaml.safe_dump(doc, f, sort_keys=False, allow_unicode=True)


def winget(out, version, url, digest):
    common = {"PackageIdentifier": PACKAGE_ID, "PackageVersion": version}
    files = {
        f"{PACKAGE_ID}.yaml": ("version", {**common, "DefaultLocale": "en-US", "ManifestType": "version"}),
        f"{PACKAGE_ID}.installer.yaml": ("installer", {
            **common,
            "InstallerType": "zip",
            "NestedInstallerType": "portable",
            "NestedInstallerFiles": [{"RelativeFilePath": "ddp-launch.exe", "PortableCommandAlias": "ddp-launch"}],
            "Commands": ["ddp-launch"],
            "Installers": [{"Architecture": "x64", "InstallerUrl": url, "InstallerSha256": digest.upper()}],
            "ManifestType": "installer",
        }),
        f"{PACKAGE_ID}.locale.en-US.yaml": ("defaultLocale", {
            **common,
            "PackageLocale": "en-US",
            "Publisher": "the ddp-launch authors",
            "PackageName": NAME,
            "PackageUrl": HOMEPAGE,
            "License": LICENSE,
            "ShortDescription": DESCRIPTION,
            "Moniker": NAME,
            "Tags": ["pytorch", "ddp", "torchrun", "distributed-training"],
            "ManifestType": "defaultLocale",
        }),
    }
    os.makedirs(out, exist_ok=True)
    paths = []
    for name, (kind, doc) in files.items():
        doc["ManifestVersion"] = MANIFEST_VERSION
        paths.append(os.path.join(out, name))
        write_yaml(paths[-1], kind, doc)
    return paths


def scoop(out, version, url, digest, url_base):
    doc = {
        "version": version,
        "description": DESCRIPTION,
        "homepage": HOMEPAGE,
        "license": LICENSE,
        "architecture": {"64bit": {"url": url, "hash": digest}},
        "bin": "ddp-launch.exe",
        "checkver": {"github": HOMEPAGE},
        "autoupdate": {"architecture": {"64bit": {
            "url": url_base.replace("{version}", "$version") + "/ddp-launch-$version-win64.zip"}}},
    }
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "ddp-launch.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", required=True, help="the Windows build (packaging/build-windows.sh)")
    ap.add_argument("--url-base", default=DEFAULT_URL_BASE,
                    help="where the release's ZIP is published; {version} is filled in")
    ap.add_argument("--out", help="default: <build-dir>/manifests")
    args = ap.parse_args()

    version_file = os.path.join(args.build_dir, "packaging", "version.txt")
    try:
        with open(version_file, encoding="utf-8") as f:
            version = f.read().strip()
    except OSError as e:
        sys.exit(f"gen-manifests: cannot read the version ({e}): configure the Windows build first "
                 "(./packaging/build-windows.sh)")
    zip_name = f"ddp-launch-{version}-win64.zip"
    zip_path = os.path.join(args.build_dir, zip_name)
    if not os.path.isfile(zip_path):
        sys.exit(f"gen-manifests: {zip_path} is missing: make it with ./packaging/build-windows-installer.sh")
    digest = sha256(zip_path)
    url_base = args.url_base.rstrip("/")
    url = url_base.replace("{version}", version) + "/" + zip_name
    out = args.out or os.path.join(args.build_dir, "manifests")
    for path in winget(os.path.join(out, "winget"), version, url, digest) + [
            scoop(os.path.join(out, "scoop"), version, url, digest, url_base)]:
        print(path)


if __name__ == "__main__":
    main()
