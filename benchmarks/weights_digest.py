"""sha256 of a saved model's weights, as the LeNet benchmarks record them (``weights_sha256`` in their results):
each state-dict entry's name, then its bytes, in the state dict's order. Two runs that print the same digest saved
bit-for-bit the same weights."""

import hashlib


def state_dict_sha256(blob: dict) -> str:
    """The full hex digest over ``blob["state_dict"]`` (a ``torch.load`` of a ``ctbench train`` output)."""
    h = hashlib.sha256()
    for name, v in blob["state_dict"].items():
        h.update(name.encode())
        h.update(v.numpy().tobytes())
    return h.hexdigest()
