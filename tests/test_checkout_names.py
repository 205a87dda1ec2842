"""The checkout's top-level folders claim no import name an installed package uses: `python -m pytest`
and xdist's workers put the repository root on sys.path, so a folder with an __init__.py named like a
dependency (kernels/, the built-in registry's data, against Hugging Face's `kernels`, which transformers
imports) would shadow it. kernels/ is data only; the code folders are named for no installed package."""
from importlib.metadata import packages_distributions

from helpers.paths import ROOT

OURS = {"kreg"}     # the distribution this checkout installs (its folders are mapped under kreg.*)


def _importable_folders():
    return sorted(p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists())


def test_the_kernels_folder_is_data_not_a_package():
    assert not (ROOT / "kernels" / "__init__.py").exists()


def test_no_importable_folder_shadows_an_installed_package():
    installed = packages_distributions()
    shadowing = {name: installed[name] for name in _importable_folders()
                 if name in installed and not set(installed[name]) <= OURS}
    assert not shadowing, f"these folders shadow installed packages (rename or drop their __init__.py): {shadowing}"
