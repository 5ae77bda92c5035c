// Two mixture-of-experts layers written with dsc's routing ops, for
// moe-routing-ops.test: Inputs/moe_routing.py is the same model in
// PyTorch with the routing done by explicit loops, and holds the weights.
// 32 tokens (batch 4 x seq 8) of width 8 over 4 experts:
//   layer 1: top-2 of the gate's softmax, capacity 10 (second choices
//            queue behind every first choice; overflow dropped), expert
//            outputs combined weighted by the top-2 probabilities;
//   layer 2: top-3 kept by priority (the gate probability), capacity 16,
//            tokens dispatched weighted by their probabilities and
//            combined unweighted.
dsc.state parameter @"emb.weight" : tensor<256x8xf32>
dsc.state parameter @"gate.weight" : tensor<4x8xf32>
dsc.state parameter @"w1" : tensor<4x8x8xf32>
dsc.state parameter @"gate2.weight" : tensor<4x8xf32>
dsc.state parameter @"w2" : tensor<4x8x8xf32>
dsc.state parameter @"head.weight" : tensor<256x8xf32>
dsc.state parameter @"head.bias" : tensor<256xf32>
func.func @forward(%tokens: tensor<4x8xi64> {dsc.input = "tokens"},
                   %targets: tensor<4x8xi64> {dsc.input = "targets"})
    -> (tensor<f32> {dsc.output = "loss"}) {
  %table = dsc.load @"emb.weight" : tensor<256x8xf32>
  %e = dsc.embedding %table, %tokens : tensor<256x8xf32>, tensor<4x8xi64>
  %x = dsc.reshape %e : tensor<4x8x8xf32> -> tensor<32x8xf32>

  %gate = dsc.load @"gate.weight" : tensor<4x8xf32>
  %logits = dsc.linear %x, %gate : tensor<32x8xf32>, tensor<4x8xf32>
  %probs = dsc.softmax %logits, dim = 1 : tensor<32x4xf32>
  %top, %experts = dsc.top_k %probs, k = 2, dim = 1 : tensor<32x4xf32>
  %slots, %counts = dsc.moe_slots %experts, capacity = 10
      : tensor<32x2xi64> -> tensor<32x2xi64>, tensor<4xi64>
  %d = dsc.moe_dispatch %x, %slots : tensor<32x8xf32>, tensor<32x2xi64> -> tensor<4x10x8xf32>
  %w1 = dsc.load @"w1" : tensor<4x8x8xf32>
  %hm = dsc.matmul %d, %w1 : tensor<4x10x8xf32>, tensor<4x8x8xf32>
  %h = dsc.tanh %hm : tensor<4x10x8xf32>
  %c = dsc.moe_combine %h, %slots, %top
      : tensor<4x10x8xf32>, tensor<32x2xi64>, tensor<32x2xf32> -> tensor<32x8xf32>
  %y = dsc.add %x, %c : tensor<32x8xf32>, tensor<32x8xf32>

  %gate2 = dsc.load @"gate2.weight" : tensor<4x8xf32>
  %logits2 = dsc.linear %y, %gate2 : tensor<32x8xf32>, tensor<4x8xf32>
  %probs2 = dsc.softmax %logits2, dim = 1 : tensor<32x4xf32>
  %top2, %experts2 = dsc.top_k %probs2, k = 3, dim = 1 : tensor<32x4xf32>
  %slots2, %counts2 = dsc.moe_slots %experts2 priority %top2, capacity = 16
      : tensor<32x3xi64>, tensor<32x3xf32> -> tensor<32x3xi64>, tensor<4xi64>
  %d2 = dsc.moe_dispatch %y, %slots2, %top2
      : tensor<32x8xf32>, tensor<32x3xi64>, tensor<32x3xf32> -> tensor<4x16x8xf32>
  %w2 = dsc.load @"w2" : tensor<4x8x8xf32>
  %h2 = dsc.matmul %d2, %w2 : tensor<4x16x8xf32>, tensor<4x8x8xf32>
  %c2 = dsc.moe_combine %h2, %slots2
      : tensor<4x16x8xf32>, tensor<32x3xi64> -> tensor<32x8xf32>
  %z = dsc.add %y, %c2 : tensor<32x8xf32>, tensor<32x8xf32>

  %hw = dsc.load @"head.weight" : tensor<256x8xf32>
  %hb = dsc.load @"head.bias" : tensor<256xf32>
  %out = dsc.linear %z, %hw, %hb : tensor<32x8xf32>, tensor<256x8xf32>, tensor<256xf32>
  %t = dsc.reshape %targets : tensor<4x8xi64> -> tensor<32xi64>
  %loss = dsc.cross_entropy %out, %t : tensor<32x256xf32>, tensor<32xi64>
  return %loss : tensor<f32>
}
