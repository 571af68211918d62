// The train dialect's checks of the training contract on @main.
// RUN: trainc-opt %s -split-input-file -verify-diagnostics

// expected-error@+1 {{'train.init' on argument 0 has type 'tensor<3xf32>' but the argument has type 'tensor<4xf32>'}}
func.func @init_type_mismatch(%w: tensor<4xf32> {train.param = "w", train.init = dense<1.0> : tensor<3xf32>}) {
  return
}

// -----

// expected-error@+1 {{'train.param' on argument 0 must be a non-empty string}}
func.func @param_not_a_string(%w: tensor<4xf32> {train.param = 3 : i64}) {
  return
}

// -----

// expected-error@+1 {{'train.frozen' on argument 0 must be a unit attribute}}
func.func @frozen_not_unit(%w: tensor<4xf32> {train.frozen = true}) {
  return
}

// -----

// expected-error@+1 {{unknown train argument attribute 'train.trainable' on argument 0}}
func.func @unknown_train_arg_attr(%w: tensor<4xf32> {train.trainable}) {
  return
}

// -----

// expected-error@+1 {{'train.state' on argument 0 must be a non-empty string}}
func.func @state_without_name(%s: tensor<i64> {train.state = ""}) {
  return
}

// -----

// expected-error@+1 {{'train.update' on result 0 must be a non-empty string}}
func.func @update_not_a_string(%x: tensor<4xf32>) -> (tensor<4xf32> {train.update = 1 : i64}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{unknown train result attribute 'train.grad' on result 0}}
func.func @unknown_train_result_attr(%x: tensor<4xf32>) -> (tensor<4xf32> {train.grad}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{'train.loss' on result 0: the loss must be a scalar float}}
func.func @loss_not_scalar(%x: tensor<4xf32>) -> (tensor<4xf32> {train.loss}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{'train.loss' on results 0 and 1: a function has one loss}}
func.func @two_losses(%x: tensor<f32>) -> (tensor<f32> {train.loss}, tensor<f32> {train.loss}) {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

// expected-error@+1 {{'train.grad_of' on result 0 names 'v', which is not a train.param}}
func.func @grad_of_unknown(%w: tensor<4xf32> {train.param = "w"}) -> (tensor<4xf32> {train.grad_of = "v"}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error@+1 {{'train.metric' on result 0 must be one of "grad_norm", "lr", "loss_scale", "step_skipped"}}
func.func @unknown_metric(%x: tensor<f32>) -> (tensor<f32> {train.metric = "accuracy"}) {
  return %x : tensor<f32>
}

// -----

// expected-error@+1 {{'train.data' on argument 0 must be "tokens" or "targets"}}
func.func @unknown_data_role(%x: tensor<2x8xi64> {train.data = "ids"}) {
  return
}

// -----

// expected-error@+1 {{'train.loss' on result 0 must be a unit attribute}}
func.func @loss_not_unit(%x: tensor<f32>) -> (tensor<f32> {train.loss = 1 : i64}) {
  return %x : tensor<f32>
}

// -----

// expected-error@+1 {{'train.metric' on result 0: a metric must be a scalar float}}
func.func @metric_not_scalar(%x: tensor<4xf32>) -> (tensor<4xf32> {train.metric = "lr"}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error@+1 {{'train.loss_scale' on argument 0 must be a unit attribute of a 0-d f32 train.state argument}}
func.func @loss_scale_not_state(%s: tensor<f32> {train.loss_scale}) {
  return
}

// -----

// expected-error@+1 {{'train.loss_scale' on argument 0 must be a unit attribute of a 0-d f32 train.state argument}}
func.func @loss_scale_not_scalar(%s: tensor<2xf32> {train.state = "loss_scale", train.init = dense<1.0> : tensor<2xf32>, train.loss_scale}) {
  return
}

// -----

// A split parameter's initial value is the whole tensor (graph.global_shape).
module attributes {graph.mesh = {data = 2 : i64}} {
// expected-error@+1 {{'train.init' on argument 0 has type 'tensor<3x2xf32>' but the argument has type 'tensor<5x2xf32>'}}
func.func @init_of_a_part(%w: tensor<3x2xf32> {train.param = "w", train.init = dense<1.0> : tensor<3x2xf32>, graph.sharding = ["data", ""], graph.global_shape = array<i64: 5, 2>}) {
  return
}
}
