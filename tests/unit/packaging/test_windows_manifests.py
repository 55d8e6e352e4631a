"""packaging/windows/gen-manifests.py: the winget (1.6) and Scoop manifests it writes parse (PyYAML,
json) and name the version and the ZIP's SHA256; a missing version or ZIP is an error naming the
script that makes it. Runs the script as build-windows-installer.sh does, on a build directory of
its own holding what the Windows build's configure step writes (project(VERSION), given by CMake)
and a ZIP of known bytes.
    test_windows_manifests.py SOURCE_DIR VERSION"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import yaml

SOURCE, VERSION = sys.argv[1], sys.argv[2]
SCRIPT = os.path.join(SOURCE, "packaging", "windows", "gen-manifests.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL", what)


def gen(build, *args):
    return subprocess.run([sys.executable, SCRIPT, "--build-dir", build, *args], capture_output=True, text=True,
                          timeout=60)


with tempfile.TemporaryDirectory() as build:
    r = gen(build)
    check(r.returncode != 0 and "build-windows.sh" in r.stderr, f"no version.txt: {r.returncode} {r.stderr}")
    os.makedirs(os.path.join(build, "packaging"))
    with open(os.path.join(build, "packaging", "version.txt"), "w") as f:
        f.write(VERSION + "\n")
    r = gen(build)
    check(r.returncode != 0 and "build-windows-installer.sh" in r.stderr, f"no ZIP: {r.returncode} {r.stderr}")

    zip_name = f"ddp-launch-{VERSION}-win64.zip"
    data = b"PK\x05\x06" + bytes(18)  # an empty ZIP: the bytes are what is hashed
    with open(os.path.join(build, zip_name), "wb") as f:
        f.write(data)
    digest = hashlib.sha256(data).hexdigest()
    r = gen(build, "--url-base", "https://example.org/rel/v{version}/")
    check(r.returncode == 0, f"gen-manifests: {r.returncode} {r.stderr}")
    url = f"https://example.org/rel/v{VERSION}/{zip_name}"
    winget = os.path.join(build, "manifests", "winget")
    docs = {}
    for kind, name in [("version", "ddp-launch.ddp-launch.yaml"), ("installer", "ddp-launch.ddp-launch.installer.yaml"),
                       ("defaultLocale", "ddp-launch.ddp-launch.locale.en-US.yaml")]:
        path = os.path.join(winget, name)
        check(path in r.stdout.splitlines(), f"{name} not among the printed paths: {r.stdout}")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        check(text.startswith(f"# yaml-language-server: $schema=https://aka.ms/winget-manifest.{kind}.1.6.0.schema.json"),
              f"{name}: schema line {text.splitlines()[0]}")
        doc = yaml.safe_load(text)
        docs[kind] = doc
        check(doc["PackageIdentifier"] == "ddp-launch.ddp-launch" and doc["PackageVersion"] == VERSION, f"{name}: {doc}")
        check(doc["ManifestType"] == kind and doc["ManifestVersion"] == "1.6.0", f"{name}: {doc}")
    check(docs["version"]["DefaultLocale"] == docs["defaultLocale"]["PackageLocale"] == "en-US", f"{docs}")
    inst = docs["installer"]
    check(inst["InstallerType"] == "zip" and inst["NestedInstallerType"] == "portable", f"{inst}")
    check(inst["NestedInstallerFiles"] == [{"RelativeFilePath": "ddp-launch.exe", "PortableCommandAlias": "ddp-launch"}],
          f"{inst}")
    check(inst["Installers"] == [{"Architecture": "x64", "InstallerUrl": url, "InstallerSha256": digest.upper()}],
          f"{inst['Installers']} != {url} {digest.upper()}")
    for field in ("Publisher", "PackageName", "License", "ShortDescription"):
        check(docs["defaultLocale"].get(field), f"defaultLocale lacks {field}")

    with open(os.path.join(build, "manifests", "scoop", "ddp-launch.json"), encoding="utf-8") as f:
        scoop = json.load(f)
    check(scoop["version"] == VERSION and scoop["bin"] == "ddp-launch.exe", f"{scoop}")
    check(scoop["architecture"]["64bit"] == {"url": url, "hash": digest}, f"{scoop['architecture']}")
    check(scoop["autoupdate"]["architecture"]["64bit"]["url"]
          == "https://example.org/rel/v$version/ddp-launch-$version-win64.zip", f"{scoop['autoupdate']}")

print(f"{'FAILED' if failures else 'ok'}: {len(failures)} failures")
sys.exit(1 if failures else 0)
