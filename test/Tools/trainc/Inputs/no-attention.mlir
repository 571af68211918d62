// A training step with no graph.attention or graph.extract_patches: no
// block to recompute (cli.test).
func.func @main(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<4xf32>},
                %x: tensor<4xf32> {graph.input = "x"}) -> (tensor<f32> {graph.output = "loss"}) {
  %0 = graph.mul %w, %x : tensor<4xf32>
  %1 = graph.reduce_sum %0, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}
