{
  description = "ltx-video-kernels: RMSNorm, AdaLN, RoPE and GELU-tanh kernels for diffusers' LTX-Video";

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
