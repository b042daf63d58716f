"""requirements.lock, requirements.txt, environment.yml and pyproject.toml agree (scripts/lock.py writes them)."""
import re
import sys

import yaml

from contention_book.harness.recording import repo_root

sys.path.insert(0, str(repo_root() / "scripts"))
import lock  # noqa: E402


def test_every_locked_package_has_a_hash():
    text = (repo_root() / "requirements.lock").read_text()
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text.strip())
    assert len(blocks) > 20
    for block in blocks:
        assert lock.PIN.match(block), block[:80]
        assert "--hash=sha256:" in block, f"no hash for {block.splitlines()[0]}"


def test_requirements_and_environment_are_derived_from_the_lock():
    req, env = lock.derive(repo_root() / "requirements.lock", repo_root() / "pyproject.toml")
    assert (repo_root() / "requirements.txt").read_text() == req, "run scripts/lock.py"
    assert (repo_root() / "environment.yml").read_text() == env, "run scripts/lock.py"


def test_environment_pip_section_is_requirements_and_every_dependency_is_pinned():
    pins = {line.strip() for line in (repo_root() / "requirements.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")}
    env = yaml.safe_load((repo_root() / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert set(pip_section) == pins
    locked = lock.locked_pins(repo_root() / "requirements.lock")
    for pin in pins:
        name, version = pin.split("==")
        assert locked[lock.canonical(name)] == version, pin
    named = {lock.canonical(n) for n in lock.direct_names(repo_root() / "pyproject.toml")}
    assert named == {lock.canonical(p.split("==")[0]) for p in pins}
