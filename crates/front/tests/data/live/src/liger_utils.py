"""Stand-in for liger_kernel.ops.utils / liger_kernel.utils: host Python only Python can run."""
import importlib.metadata
import importlib.util


def compare_version(package, op, target):
    try:
        have = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return False
    return op(tuple(int(p) for p in have.split(".")[:2]), tuple(int(p) for p in target.split(".")[:2]))


def is_npu_available():
    return importlib.util.find_spec("torch_npu") is not None
