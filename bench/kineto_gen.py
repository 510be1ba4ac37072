#!/usr/bin/env python3
"""kineto_gen.py -- a deterministic Kineto (PyTorch profiler) trace of any size.

Writes what torch.profiler's export_chrome_trace writes for a data-parallel
transformer training loop on one GPU, laid out as Kineto lays it out:

- an Object-format file: schemaVersion, deviceProperties and distributedInfo
  before "traceEvents"; traceName, displayTimeUnit and baseTimeNanoseconds
  after it; the events one per line group, in Kineto's indentation;
- the events in Kineto's order, an enclosing event often after what it
  encloses: first the CPU ops (cpu_op before its children, user_annotation
  such as ProfilerStep#N at its scope's end, after them; fwdbwd flows from
  forward ops to the autograd thread), then the memory instants and
  counters, then the python_function stacks (around layers and steps, the
  script's <module> frame last), then the GPU
  activity buffer (for each launch: the kernel or memcpy/memset on its
  stream, its ac2g "f" flow end, the cuda_runtime call, its ac2g "s" flow
  start; the flow id is the CUDA correlation id that binds launch to kernel),
  then the gpu_user_annotation spans, the M metadata and the profiler span;
- ts and dur in microseconds with three decimals ("4458676522690.655").

CPU ops nest properly per thread, kernels never overlap on a stream and
start after their launch.  The same --seed and --size give the same bytes.
Writes --out and, beside it, --manifest (default OUT.manifest.json): bytes,
the number of elements of traceEvents and counts by phase and category.

  bench/kineto_gen.py --out FILE [--size 1G] [--seed 1] [--manifest FILE]
      [--no-flows]
"""
import argparse
import json
import os
import random
import shutil
import tempfile

PID = 2910249
MAIN_TID = 2910249
AUTOGRAD_TID = 2919752
GPU_PID = 0
COMPUTE_STREAM = 7
COPY_STREAM = 20
NCCL_STREAM = 24
# Kineto's ts: microseconds since baseTimeNanoseconds.
BASE_NS = 1711964646000000000
T0_NS = 4458676388068751

FLOW_KEYS = ("s ac2g", "f ac2g", "s fwdbwd", "f fwdbwd")
LAYERS = 12
PARAMS_PER_LAYER = 6

GEMM_KERNELS = [
    "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_"
    "warpsize2x2x1_tensor16x8x16_kernel",
    "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize160x128x32_stage4_"
    "warpsize2x2x1_tensor16x8x16_kernel",
    "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn",
    "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_nt",
    "void cutlass::Kernel<cutlass_80_tensorop_f16_s16816gemm_relu_f16_"
    "128x256_32x3_nn_align8>(cutlass_80_tensorop_f16_s16816gemm_relu_f16_"
    "128x256_32x3_nn_align8::Params)",
]
ELEMENTWISE = {
    "aten::add": "void at::native::vectorized_elementwise_kernel<4, "
    "at::native::CUDAFunctor_add<c10::Half>, at::detail::Array<char*, 3> >"
    "(int, at::native::CUDAFunctor_add<c10::Half>, at::detail::Array<char*, "
    "3>)",
    "aten::gelu": "void at::native::vectorized_elementwise_kernel<4, "
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::"
    "operator()() const::{lambda(c10::Half)#1}, at::detail::Array<char*, 2> >"
    "(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::"
    "operator()() const::{lambda(c10::Half)#1}, at::detail::Array<char*, 2>)",
    "aten::mul": "void at::native::vectorized_elementwise_kernel<4, "
    "at::native::AUnaryFunctor<c10::Half, c10::Half, c10::Half, "
    "at::native::binary_internal::MulFunctor<float> >, "
    "at::detail::Array<char*, 2> >(int, at::native::AUnaryFunctor<c10::Half, "
    "c10::Half, c10::Half, at::native::binary_internal::MulFunctor<float> >, "
    "at::detail::Array<char*, 2>)",
    "aten::_softmax": "void (anonymous namespace)::softmax_warp_forward"
    "<c10::Half, c10::Half, float, 10, false, false>(c10::Half*, "
    "c10::Half const*, int, int, int, bool const*, int, bool)",
    "aten::native_layer_norm": "void at::native::(anonymous namespace)::"
    "vectorized_layer_norm_kernel<c10::Half, float>(int, float, "
    "c10::Half const*, c10::Half const*, c10::Half const*, float*, float*, "
    "c10::Half*)",
    "aten::native_dropout": "void at::native::(anonymous namespace)::"
    "fused_dropout_kernel_vec<c10::Half, float, unsigned int, 1, 8, bool>"
    "(at::cuda::detail::TensorInfo<c10::Half const, unsigned int>, "
    "at::cuda::detail::TensorInfo<c10::Half, unsigned int>, "
    "at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, "
    "at::PhiloxCudaState)",
}
BACKWARD_KERNELS = [
    "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel"
    "<c10::Half, float>(c10::Half const*, c10::Half const*, float const*, "
    "float const*, c10::Half const*, c10::Half*, int)",
    "void (anonymous namespace)::softmax_warp_backward<c10::Half, c10::Half, "
    "float, 10, false, false>(c10::Half*, c10::Half const*, c10::Half const*, "
    "int, int, int, bool const*)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::Half, "
    "at::native::func_wrapper_t<c10::Half, at::native::sum_functor<c10::Half, "
    "float, c10::Half>::operator()(at::TensorIterator&)::{lambda(float, "
    "float)#1}>, unsigned int, c10::Half, 4> >(at::native::ReduceOp<c10::Half"
    ", at::native::func_wrapper_t<c10::Half, at::native::sum_functor<"
    "c10::Half, float, c10::Half>::operator()(at::TensorIterator&)::{lambda("
    "float, float)#1}>, unsigned int, c10::Half, 4>)",
]
NCCL_KERNEL = ("ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevComm*, "
               "unsigned long, ncclWork*)")
ADAM_KERNEL = ("void at::native::(anonymous namespace)::multi_tensor_apply_"
               "kernel<at::native::(anonymous namespace)::TensorListMetadata"
               "<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor"
               "<c10::Half, 4, (at::native::ADAM_MODE)1, false>, double*, "
               "double, double, double, double, double, bool, double*, "
               "double*>(at::native::(anonymous namespace)::"
               "TensorListMetadata<4>, at::native::(anonymous namespace)::"
               "FusedAdamMathFunctor<c10::Half, 4, (at::native::ADAM_MODE)1, "
               "false>, double*, double, double, double, double, double, "
               "bool, double*, double*)")


def us(ns):
    """Kineto's microsecond text with three decimals."""
    return "%d.%03d" % (ns // 1000, ns % 1000)


def q(s):
    """A JSON string literal."""
    return json.dumps(s)


class Gen:
    def __init__(self, seed, parts, flows=True):
        self.r = random.Random(seed)
        self.flows = flows
        self.cpu, self.mem, self.py, self.gpu = parts
        self.clock = {MAIN_TID: T0_NS + 30000000, AUTOGRAD_TID: 0}
        self.stream_free = {COMPUTE_STREAM: 0, COPY_STREAM: 0,
                            NCCL_STREAM: 0}
        self.ext_id = 2048
        self.correlation = 57000
        self.seq = 0
        self.fwdbwd = 0
        self.ev_idx = 0
        self.py_id = 0
        self.allocated = 1 << 30
        self.reserved = 3 << 30
        self.count = {}
        self.step = 0
        self.step_spans = []
        self.root_py = None  # the python id of the script's <module> frame

    # ------------------------------------------------------------ writing
    def put(self, part, key, text):
        if not self.flows and key in FLOW_KEYS:
            return
        part.append(text)
        self.count[key] = self.count.get(key, 0) + 1

    def next_ev_idx(self):
        self.ev_idx += 1
        return self.ev_idx - 1

    def x_event(self, cat, name, pid, tid, ts, dur, args):
        return ('  {\n    "ph": "X", "cat": "%s", "name": %s, "pid": %d, '
                '"tid": %d,\n    "ts": %s, "dur": %s,\n    "args": {\n'
                '      %s\n    }\n  },\n' % (cat, q(name), pid, tid, us(ts),
                                            us(dur), args))

    def flow(self, ph, fid, pid, tid, ts, cat, enclosing):
        return ('  {\n    "ph": "%s", "id": %d, "pid": %d, "tid": %d, '
                '"ts": %s,\n    "cat": "%s", "name": "%s"%s\n  },\n'
                % (ph, fid, pid, tid, us(ts), cat, cat,
                   ', "bp": "e"' if enclosing else ""))

    # ------------------------------------------------------------ CPU side
    def gap(self, lo, hi):
        return self.r.randint(lo, hi)

    def op(self, tid, cat, name, body=None, seq=False):
        """One CPU op on tid: children run inside it; returns (start, end)."""
        start = self.clock[tid]
        self.ext_id += 1
        ext = self.ext_id
        # a cpu_op is written before its children (filled in once they are
        # known), a user_annotation at its scope's end, after them
        pending = []
        if cat != "user_annotation":
            self.cpu.append(pending)
        self.clock[tid] += self.gap(2000, 9000)
        if body:
            body()
        if cat == "user_annotation":
            self.cpu.append(pending)
        self.clock[tid] += self.gap(1500, 6000)
        end = self.clock[tid]
        args = '"External id": %d,"Record function id": 0' % ext
        if seq:
            args += ', "Sequence number": %d, "Fwd thread id": 0' % self.seq
        args += ', "Ev Idx": %d' % self.next_ev_idx()
        pending.append(self.x_event(cat, name, PID, tid, start, end - start,
                                    args))
        self.count["X " + cat] = self.count.get("X " + cat, 0) + 1
        return start, end

    def memory(self, tid, nbytes):
        self.allocated += nbytes
        self.reserved = max(self.reserved, self.allocated + (256 << 20))
        ts = self.clock[tid]
        self.put(self.mem, "i cpu_instant_event",
                 '  {\n    "ph": "i", "cat": "cpu_instant_event", "s": "t", '
                 '"name": "[memory]",\n    "pid": %d, "tid": %d,\n'
                 '    "ts": %s,\n    "args": {\n      "Total Reserved": %d, '
                 '"Total Allocated": %d, "Bytes": %d, "Addr": %d, '
                 '"Device Id": 0, "Device Type": 1, "Ev Idx": %d\n    }\n'
                 '  },\n' % (PID, tid, us(ts), self.reserved, self.allocated,
                             nbytes, 139637617623040 + self.r.randrange(1 << 32)
                             * 512, self.next_ev_idx()))
        if self.ev_idx % 8 == 0:
            self.put(self.mem, "C",
                     '  {\n    "ph": "C", "name": "GPU Memory", "pid": %d, '
                     '"tid": 0,\n    "ts": %s,\n    "args": {\n'
                     '      "Allocated": %d, "Reserved": %d\n    }\n  },\n'
                     % (PID, us(ts), self.allocated, self.reserved))

    def launch(self, tid, kernel, stream=COMPUTE_STREAM, kind="kernel",
               nbytes=0):
        """cudaLaunchKernel (or cudaMemcpyAsync/Memset) on tid, its work on
        the GPU stream and the ac2g flow binding the two."""
        self.correlation += 1
        corr = self.correlation
        t = self.clock[tid] + self.gap(1000, 3000)
        rdur = self.gap(3000, 12000)
        self.clock[tid] = t + rdur + self.gap(500, 2000)
        if kind == "kernel":
            rt_name, cbid = "cudaLaunchKernel", 211
            kdur = self.gap(2000, 400000)
            if stream == NCCL_STREAM:
                kdur = self.gap(800000, 4000000)
        elif kind == "memcpy":
            rt_name, cbid = "cudaMemcpyAsync", 41
            kdur = 1000 + nbytes // 12000
        else:
            rt_name, cbid = "cudaMemsetAsync", 51
            kdur = self.gap(700, 3000)
        ks = max(t + self.gap(4000, 15000), self.stream_free[stream])
        self.stream_free[stream] = ks + kdur + self.gap(800, 3000)
        dev = '"device": 0, "context": 1,      "stream": %d, ' \
              '"correlation": %d' % (stream, corr)
        if kind == "kernel":
            grid = self.r.choice((1, 4, 108, 216, 512, 1728, 4096))
            blk = self.r.choice((128, 256, 512))
            args = ('"External id": %d,      "queued": 0, %s,      '
                    '"registers per thread": %d,      "shared memory": %d,'
                    '      "blocks per SM": %.6f,      "warps per SM": %.6f,'
                    '      "grid": [%d, 1, 1],      "block": [%d, 1, 1],'
                    '      "est. achieved occupancy %%": %d'
                    % (self.ext_id, dev, self.r.choice((16, 32, 40, 128, 255)),
                       self.r.choice((0, 400, 16384, 49152)), grid / 108,
                       grid * blk / 32 / 108, grid, blk,
                       self.r.randint(0, 100)))
            cat = "kernel"
        else:
            gbps = nbytes / max(kdur, 1)
            args = ('"External id": %d, %s,      "bytes": %d,      '
                    '"memory bandwidth (GB/s)": %r'
                    % (self.ext_id, dev, nbytes, gbps))
            cat = "gpu_memcpy" if kind == "memcpy" else "gpu_memset"
        self.put(self.gpu, "X " + cat,
                 self.x_event(cat, kernel, GPU_PID, stream, ks, kdur, args))
        self.put(self.gpu, "f ac2g",
                 self.flow("f", corr, GPU_PID, stream, ks, "ac2g", True))
        self.put(self.gpu, "X cuda_runtime",
                 self.x_event("cuda_runtime", rt_name, PID, tid, t, rdur,
                              '"External id": %d,      "cbid": %d, '
                              '"correlation": %d' % (self.ext_id, cbid, corr)))
        self.put(self.gpu, "s ac2g",
                 self.flow("s", corr, PID, tid, t, "ac2g", False))

    def aten(self, tid, name, kernel=None, alloc=0, children=(), seq=False):
        def body():
            if alloc:
                self.op(tid, "cpu_op", "aten::empty",
                        lambda: self.memory(tid, alloc))
            for c in children:
                c()
            if kernel:
                self.launch(tid, kernel)
        return self.op(tid, "cpu_op", name, body, seq=seq)

    def forward_op(self, name, kernel, alloc, children=()):
        """A forward op with a sequence number: its backward runs later on
        the autograd thread, linked by a fwdbwd flow."""
        self.seq += 1
        seq = self.seq
        start, _ = self.aten(MAIN_TID, name, kernel, alloc, children, True)
        self.fwdbwd += 1
        self.put(self.cpu, "s fwdbwd",
                 self.flow("s", self.fwdbwd, PID, MAIN_TID, start, "fwdbwd",
                           False))
        return seq, self.fwdbwd, name

    def linear(self, fwd):
        t = lambda: self.aten(MAIN_TID, "aten::t", children=(
            lambda: self.aten(MAIN_TID, "aten::transpose", children=(
                lambda: self.aten(MAIN_TID, "aten::as_strided"),)),))
        fwd.append(self.forward_op(
            "aten::linear", None, 0,
            (t, lambda: self.aten(MAIN_TID, "aten::addmm",
                                  self.r.choice(GEMM_KERNELS),
                                  self.r.choice((4, 8, 16)) << 20))))

    def layer(self, i, fwd):
        def body():
            fwd.append(self.forward_op("aten::layer_norm", ELEMENTWISE[
                "aten::native_layer_norm"], 2 << 20))
            for _ in range(3):
                self.linear(fwd)
            fwd.append(self.forward_op("aten::_softmax",
                                       ELEMENTWISE["aten::_softmax"], 8 << 20))
            fwd.append(self.forward_op("aten::dropout",
                                       ELEMENTWISE["aten::native_dropout"],
                                       8 << 20))
            self.linear(fwd)
            fwd.append(self.forward_op("aten::add", ELEMENTWISE["aten::add"],
                                       2 << 20))
            fwd.append(self.forward_op("aten::layer_norm", ELEMENTWISE[
                "aten::native_layer_norm"], 2 << 20))
            self.linear(fwd)
            fwd.append(self.forward_op("aten::gelu", ELEMENTWISE["aten::gelu"],
                                       8 << 20))
            self.linear(fwd)
            fwd.append(self.forward_op("aten::add", ELEMENTWISE["aten::add"],
                                       2 << 20))
        depth = self.r.randint(3, 7)
        start = self.clock[MAIN_TID]
        self.clock[MAIN_TID] += depth * 700 + 300
        body()
        self.clock[MAIN_TID] += depth * 500 + 300
        self.python_stack(i, depth, start, self.clock[MAIN_TID])
        self.clock[MAIN_TID] += self.gap(1000, 4000)

    def python_frame(self, name, start, end, parent, py_id=None, module=None):
        """One python_function frame on the main thread; returns its id."""
        if py_id is None:
            self.py_id += 1
            py_id = self.py_id
        mod = (', "Python module id": %d' % module) if module is not None \
            else ""
        self.put(self.py, "X python_function",
                 self.x_event("python_function", name, PID, MAIN_TID, start,
                              end - start,
                              '"Python parent id": %s, "Python id": %d%s, '
                              '"Ev Idx": %d' % (
                                  "null" if parent is None else parent,
                                  py_id, mod, self.next_ev_idx())))
        return py_id

    def python_stack(self, i, depth, start, end):
        """The python_function frames around one layer's forward."""
        frames = ["nn.Module: TransformerEncoderLayer_%d" % i,
                  "torch/nn/modules/module.py(1527): _call_impl",
                  "torch/nn/modules/transformer.py(714): forward",
                  "torch/nn/modules/transformer.py(824): _sa_block",
                  "torch/nn/modules/activation.py(1241): forward",
                  "torch/nn/functional.py(5101): multi_head_attention_forward",
                  "<built-in method linear of type object at 0x7f1c2d9e4a40>"]
        parent = None
        for d in range(depth):
            parent = self.python_frame(frames[d], start + d * 700,
                                       end - d * 500, parent,
                                       module=i if d == 0 else None)

    def backward(self, fwd, start):
        self.clock[AUTOGRAD_TID] = max(self.clock[AUTOGRAD_TID], start)
        for seq, fid, name in reversed(fwd):
            grad = {"aten::linear": "AddmmBackward0",
                    "aten::layer_norm": "NativeLayerNormBackward0",
                    "aten::_softmax": "SoftmaxBackward0",
                    "aten::dropout": "NativeDropoutBackward0",
                    "aten::add": "AddBackward0",
                    "aten::gelu": "GeluBackward0"}[name]
            self.put(self.cpu, "f fwdbwd",
                     self.flow("f", fid, PID, AUTOGRAD_TID,
                               self.clock[AUTOGRAD_TID] + 1000, "fwdbwd",
                               True))

            def inner(grad=grad):
                if grad == "AddmmBackward0":
                    for _ in range(2):
                        self.aten(AUTOGRAD_TID, "aten::mm",
                                  self.r.choice(GEMM_KERNELS), 4 << 20)
                    self.aten(AUTOGRAD_TID, "aten::sum",
                              BACKWARD_KERNELS[2], 1 << 16)
                elif grad == "NativeLayerNormBackward0":
                    self.aten(AUTOGRAD_TID, "aten::native_layer_norm_backward",
                              BACKWARD_KERNELS[0], 2 << 20)
                elif grad == "SoftmaxBackward0":
                    self.aten(AUTOGRAD_TID, "aten::_softmax_backward_data",
                              BACKWARD_KERNELS[1], 8 << 20)
                else:
                    self.aten(AUTOGRAD_TID, "aten::mul",
                              ELEMENTWISE["aten::mul"], 2 << 20)

            self.op(AUTOGRAD_TID, "cpu_op",
                    "autograd::engine::evaluate_function: " + grad,
                    lambda inner=inner, grad=grad: self.op(
                        AUTOGRAD_TID, "cpu_op", grad, inner, seq=True),
                    seq=True)
        # gradient buckets all-reduced as they become ready
        for _ in range(2):
            self.op(AUTOGRAD_TID, "user_annotation", "nccl:all_reduce",
                    lambda: self.op(AUTOGRAD_TID, "cpu_op",
                                    "record_param_comms",
                                    lambda: self.launch(AUTOGRAD_TID,
                                                        NCCL_KERNEL,
                                                        NCCL_STREAM)))

    def one_step(self):
        m = MAIN_TID

        def step_body():
            def loader():
                self.aten(m, "aten::empty", alloc=1 << 20)
                self.aten(m, "aten::to", children=(
                    lambda: self.aten(m, "aten::_to_copy", children=(
                        lambda: self.aten(m, "aten::copy_", children=(
                            lambda: self.launch(m, "Memcpy HtoD (Pageable -> "
                                                "Device)", COPY_STREAM,
                                                "memcpy", 4 << 20),)),)),))
            self.op(m, "user_annotation",
                    "enumerate(DataLoader)#_SingleProcessDataLoaderIter."
                    "__next__", loader)
            self.op(m, "cpu_op", "aten::zero_", lambda: self.launch(
                m, "Memset (Device)", COMPUTE_STREAM, "memset", 1 << 16))
            fwd = []
            fstart = self.clock[m]
            for i in range(LAYERS):
                self.layer(i, fwd)
            bstart = self.clock[m]
            self.backward(fwd, bstart)
            self.clock[m] = max(self.clock[m], self.clock[AUTOGRAD_TID]) \
                + self.gap(5000, 20000)

            def adam():
                for _ in range(LAYERS * PARAMS_PER_LAYER // 24):
                    self.aten(m, "aten::_fused_adam_", ADAM_KERNEL)
            self.op(m, "user_annotation", "Optimizer.step#AdamW.step", adam)
            self.allocated = 1 << 30
            return fstart, bstart

        start = self.clock[m]
        self.op(m, "user_annotation", "ProfilerStep#%d" % self.step, step_body)
        # the training script's frame around the step (and its annotation)
        self.python_frame("train.py(64): train_step", start - 1500,
                          self.clock[m] + 1000, self.root_py)
        gpu_end = max(self.stream_free.values())
        self.step_spans.append((self.step, start, gpu_end))
        self.clock[m] = max(self.clock[m], gpu_end) + self.gap(10000, 40000)
        self.step += 1

    def flush_cpu(self, out):
        n = 0
        for item in self.cpu:
            if isinstance(item, list):
                for s in item:
                    out.write(s)
                    n += len(s)
            else:
                out.write(item)
                n += len(item)
        self.cpu.clear()
        return n


def flush(part, out):
    n = 0
    for s in part:
        out.write(s)
        n += len(s)
    part.clear()
    return n


def header():
    props = []
    for i in range(8):
        props.append(
            '    {\n      "id": %d, "name": "NVIDIA A100-SXM4-80GB", '
            '"totalGlobalMem": 85029158912,\n      "computeMajor": 8, '
            '"computeMinor": 0,\n      "maxThreadsPerBlock": 1024, '
            '"maxThreadsPerMultiprocessor": 2048,\n      "regsPerBlock": '
            '65536, "warpSize": 32,\n      "sharedMemPerBlock": 49152, '
            '"numSms": 108\n    , "regsPerMultiprocessor": 65536, '
            '"sharedMemPerBlockOptin": 166912, "sharedMemPerMultiprocessor": '
            '167936\n    }' % i)
    return ('\n{\n  "schemaVersion": 1,\n  "deviceProperties": [\n%s\n  ],\n'
            '  "distributedInfo": {"backend": "nccl", "rank": 0, '
            '"world_size": 8, "pg_count": 1, "pg_config": [{"pg_name": "0", '
            '"pg_desc": "default_pg", "backend_config": "cuda:nccl", '
            '"pg_size": 8, "ranks": [0, 1, 2, 3, 4, 5, 6, 7]}], '
            '"nccl_version": "2.18.1"},\n  "traceEvents": [\n'
            % ",\n".join(props))


def trailer(g, first_ns, last_ns):
    out = []
    for i, s, e in g.step_spans:
        out.append(g.x_event("gpu_user_annotation", "ProfilerStep#%d" % i,
                             GPU_PID, COMPUTE_STREAM, s + 9000, e - s - 9000,
                             '"External id": %d' % (i + 1)))
        g.count["X gpu_user_annotation"] = \
            g.count.get("X gpu_user_annotation", 0) + 1
    meta = [(PID, 0, "process_name", '"name": "python3.10"'),
            (PID, 0, "process_labels", '"labels": "CPU"'),
            (PID, 0, "process_sort_index", '"sort_index": %d' % PID),
            (GPU_PID, 0, "process_name", '"name": "python3.10"'),
            (GPU_PID, 0, "process_labels", '"labels": "GPU 0"'),
            (GPU_PID, 0, "process_sort_index", '"sort_index": 16777216')]
    for stream in (COMPUTE_STREAM, COPY_STREAM, NCCL_STREAM):
        meta.append((GPU_PID, stream, "thread_name",
                     '"name": "stream %d "' % stream))
        meta.append((GPU_PID, stream, "thread_sort_index",
                     '"sort_index": %d' % stream))
    for tid, tname in ((MAIN_TID, "pt_main_thread"),
                       (AUTOGRAD_TID, "pt_autograd_0")):
        meta.append((PID, tid, "thread_name",
                     '"name": "thread %d (%s)"' % (tid, tname)))
        meta.append((PID, tid, "thread_sort_index",
                     '"sort_index": %d' % tid))
    for pid, tid, kind, args in meta:
        out.append('  {\n    "name": "%s", "ph": "M", "ts": %s, "pid": %d, '
                   '"tid": %d,\n    "args": {\n      %s\n    }\n  },\n'
                   % (kind, us(first_ns), pid, tid, args))
        g.count["M"] = g.count.get("M", 0) + 1
    out.append('  {\n    "ph": "X", "cat": "Trace", "ts": %s, "dur": %s,\n'
               '    "pid": "Spans", "tid": "PyTorch Profiler",\n'
               '    "name": "PyTorch Profiler (0)",\n    "args": {\n'
               '      "Op count": 0\n    }\n  },\n'
               '  {\n    "name": "process_sort_index", "ph": "M", "ts": %s,\n'
               '    "pid": "Spans", "tid": 0,\n    "args": {\n'
               '      "sort_index": 536870912\n    }\n  },\n'
               '  {\n    "name": "Iteration Start: PyTorch Profiler", "ph": '
               '"i", "s": "g",\n    "pid": "Traces", "tid": "Trace PyTorch '
               'Profiler", "ts": %s\n  },\n'
               '  {\n    "name": "Record Window End", "ph": "i", "s": "g",\n'
               '    "pid": "", "tid": "", "ts": %s\n  }\n  ],\n'
               % (us(first_ns), us(last_ns - first_ns), us(first_ns),
                  us(first_ns), us(last_ns + 1000)))
    g.count["X Trace"] = 1
    g.count["M"] += 1
    g.count["i"] = 2
    out.append('  "traceName": "/tmp/kineto_gen.json",\n'
               '  "displayTimeUnit": "ms",\n'
               '  "baseTimeNanoseconds": %d\n}\n' % BASE_NS)
    return "".join(out)


def parse_size(text):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().rstrip("b")
    if t and t[-1] in mult:
        return int(float(t[:-1]) * mult[t[-1]])
    return int(t)


def generate(out_path, size, seed, flows=True):
    """Writes the trace; returns the manifest dict."""
    d = os.path.dirname(os.path.abspath(out_path))
    os.makedirs(d, exist_ok=True)
    tmpdir = tempfile.mkdtemp(prefix=".kineto_gen.", dir=d)
    names = ("cpu", "mem", "py", "gpu")
    files = [open(os.path.join(tmpdir, n), "w", buffering=1 << 20)
             for n in names]
    g = Gen(seed, ([], [], [], []), flows)
    head = header()
    written = len(head) + 4096  # the trailer is a few KB
    first = g.clock[MAIN_TID]
    g.py_id += 1
    g.root_py = g.py_id  # written last, around every step
    while written < size:
        g.one_step()
        written += g.flush_cpu(files[0])
        written += flush(g.mem, files[1])
        written += flush(g.py, files[2])
        written += flush(g.gpu, files[3])
    # the script's <module> frame, in the python block after every step's
    g.python_frame("train.py(120): <module>", first - 2000,
                   g.clock[MAIN_TID] - 5000, None, g.root_py)
    written += flush(g.py, files[2])
    last = max(g.clock[MAIN_TID], max(g.stream_free.values()))
    tail = trailer(g, first - 300000, last)
    for f in files:
        f.close()
    tmp_out = out_path + ".tmp"
    with open(tmp_out, "w") as out:
        out.write(head)
        for n in names:
            with open(os.path.join(tmpdir, n)) as f:
                shutil.copyfileobj(f, out, 1 << 22)
        out.write(tail)
    shutil.rmtree(tmpdir)
    os.replace(tmp_out, out_path)
    phases = {}
    for k, v in g.count.items():
        phases[k.split(" ")[0]] = phases.get(k.split(" ")[0], 0) + v
    return {"file": os.path.abspath(out_path), "seed": seed, "flows": flows,
            "requested_bytes": size, "bytes": os.path.getsize(out_path),
            "events": sum(g.count.values()), "steps": g.step,
            "by_phase": dict(sorted(phases.items())),
            "by_phase_cat": dict(sorted(g.count.items()))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--size", default="1G",
                    help="approximate size: bytes or 300M, 1G")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--manifest")
    ap.add_argument("--no-flows", action="store_true",
                    help="leave out the ac2g and fwdbwd flow events (to "
                    "measure what flows cost)")
    a = ap.parse_args()
    man = generate(a.out, parse_size(a.size), a.seed, not a.no_flows)
    with open(a.manifest or a.out + ".manifest.json", "w") as f:
        json.dump(man, f, indent=1)
        f.write("\n")
    print(json.dumps({k: man[k] for k in ("bytes", "events", "steps")}))


if __name__ == "__main__":
    main()
