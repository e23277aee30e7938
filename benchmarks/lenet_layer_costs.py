"""CPU ms of LeNet's layers at the search's batch (5,000 rows, one thread): forward, input gradient (as the search's
autograd asks for it: weights frozen), the input gradient in channels-last and as a forward convolution with the
flipped kernel, and whether each alternative is bitwise equal (issue 21 (a); results in
``results/lenet-search-threads.md``).

    OMP_NUM_THREADS=1 python benchmarks/lenet_layer_costs.py
"""

import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)
B = 5000
CL = torch.channels_last


def cpu_ms(f, n=2):
    f()
    t = time.process_time()
    for _ in range(n):
        r = f()
    return (time.process_time() - t) / n * 1e3, r


def input_grad(go, x, w):
    return torch.ops.aten.convolution_backward(go, x, w, None, [1, 1], [2, 2], [1, 1], False, [0, 0], 1,
                                               [True, False, False])[0]


def layer(name, cin, cout, hw):
    x, w = torch.rand(B, cin, hw, hw), torch.randn(cout, cin, 5, 5) * 0.2
    go = torch.randn(B, cout, hw, hw)
    xc, goc = x.contiguous(memory_format=CL), go.contiguous(memory_format=CL)  # layout copies not timed
    wf = w.flip(2, 3).transpose(0, 1).contiguous()
    tf, _ = cpu_ms(lambda: F.conv2d(x, w, padding=2))
    tb, g = cpu_ms(lambda: input_grad(go, x, w))
    tc, gc = cpu_ms(lambda: input_grad(goc, xc, w))
    tt, gt = cpu_ms(lambda: F.conv2d(go, wf, padding=2))
    rel = float((g - gt).abs().max() / g.abs().max())
    print(f"{name}: forward {tf:.0f} ms, input gradient {tb:.0f} ms, channels-last {tc:.0f} ms (bitwise "
          f"{torch.equal(g, gc)}), flipped-kernel forward {tt:.0f} ms (bitwise {torch.equal(g, gt)}, "
          f"max rel {rel:.1e})", flush=True)


layer("conv1", 1, 6, 28)
layer("conv2", 6, 16, 14)
y = torch.rand(B, 6, 28, 28)
tp, _ = cpu_ms(lambda: F.max_pool2d_with_indices(y, 2))
yc = y.contiguous(memory_format=CL)
tq, _ = cpu_ms(lambda: F.max_pool2d_with_indices(yc, 2))
print(f"max-pool (5000, 6, 28, 28): {tp:.0f} ms, channels-last {tq:.0f} ms (layout copy not timed)")
