// cuda/device: device probe and self-test for the CUDA driver boundary (extern "C").
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "cuda/common.cuh"

extern "C" {
#include "cuda/cuda.h"
}

extern "C" bool cll_cuda_built(void) { return true; }

extern "C" cll_status cll_cuda_device_count(int *n) {
    *n = 0;
    cudaError_t e = cudaGetDeviceCount(n);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
        cudaGetLastError(); /* clear the sticky-free error so later calls start clean */
        *n = 0;
        return CLL_OK;
    }
    if (e != cudaSuccess) return cll_err(CLL_ERR_DEVICE, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
    return CLL_OK;
}

extern "C" cll_status cll_cuda_device_info(int dev, cll_cuda_device *out) {
    memset(out, 0, sizeof *out);
    cudaDeviceProp p;
    CLL_CU_TRY(cudaGetDeviceProperties(&p, dev));
    snprintf(out->name, sizeof out->name, "%s", p.name);
    out->sm_count = p.multiProcessorCount;
    out->cc_major = p.major;
    out->cc_minor = p.minor;
    out->mem_bytes = (uint64_t)p.totalGlobalMem;
    out->mem_bus_bits = p.memoryBusWidth;
    int v = 0;
    /* clock attributes moved out of cudaDeviceProp in CUDA 13: ask for them one by one */
    if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, dev) == cudaSuccess) out->clock_khz = v;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, dev) == cudaSuccess) out->mem_clock_khz = v;
    cudaGetLastError();
    CLL_CU_TRY(cudaDriverGetVersion(&out->driver_version));
    CLL_CU_TRY(cudaRuntimeGetVersion(&out->runtime_version));
    return CLL_OK;
}

extern "C" bool cll_cuda_host_pinned(const void *p) {
    cudaPointerAttributes a;
    if (!p || cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

/* y[i] = a * x[i] + i: every element written, each depends on its index */
__global__ static void axpy_index_kernel(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + (float)i;
}

extern "C" cll_status cll_cuda_use_device(int dev) {
    int n = 0;
    CLL_CU_TRY(cudaGetDeviceCount(&n));
    if (dev < 0 || dev >= n) return cll_err(CLL_ERR_ARG, "cuda: device %d requested, %d visible", dev, n);
    CLL_CU_TRY(cudaSetDevice(dev));
    return CLL_OK;
}

extern "C" cll_status cll_cuda_selftest(int dev) {
    enum { N = 1 << 16 };
    static float hx[N], hy[N];
    for (int i = 0; i < N; i++) {
        hx[i] = (float)(i % 97) * 0.5f;
        hy[i] = __builtin_nanf("");
    }
    float *dx = NULL, *dy = NULL;
    CLL_CU_TRY(cudaSetDevice(dev));
    CLL_CU_TRY(cudaMalloc(&dx, N * sizeof(float)));
    cudaError_t e = cudaMalloc(&dy, N * sizeof(float));
    if (e != cudaSuccess) {
        cudaFree(dx);
        return cll_err(CLL_ERR_DEVICE, "cudaMalloc: %s", cudaGetErrorString(e));
    }
    cudaMemcpy(dx, hx, N * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(dy, 0xff, N * sizeof(float)); /* NaN poison: unwritten elements show */
    axpy_index_kernel<<<(N + 255) / 256, 256>>>(3.0f, dx, dy, N);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpy(hy, dy, N * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
    if (e != cudaSuccess) return cll_err(CLL_ERR_DEVICE, "self-test kernel: %s", cudaGetErrorString(e));
    for (int i = 0; i < N; i++)
        if (hy[i] != 3.0f * hx[i] + (float)i)
            return cll_err(CLL_ERR_DEVICE, "self-test kernel: element %d is %g, expected %g", i, hy[i],
                           3.0f * hx[i] + (float)i);
    return CLL_OK;
}
