{
  description = "Flake for the qwen3-8b-kernels example (RMSNorm, fused add + RMSNorm, SwiGLU, RoPE)";

  inputs = {
    kernel-builder.url = "github:huggingface/kernels";
  };

  outputs =
    {
      self,
      kernel-builder,
    }:
    kernel-builder.lib.genKernelFlakeOutputs {
      inherit self;
      path = ./.;
    };
}
