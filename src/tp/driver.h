/* tp/driver: tensor parallel (issue 13) as one more driver behind model/driver.h: the ranks of an
 * inner driver (cpu or cuda), each holding its shard of the model (model/shard.h) and its heads' KV
 * cache, joined by the inner driver's communicator; their forwards run on their own threads, and the
 * output head's vocab slices are gathered here (logits) or merged (greedy ids, top-k candidates).
 * Owns: the shard views, the rank models and states, the communicator, the rank threads.
 * Rule: nothing here knows a device; the split comes from cll_shard_plan alone, and TP=1 runs the
 * inner driver on the whole model through the same path (bit for bit the single driver). */
#ifndef CLL_TP_DRIVER_H
#define CLL_TP_DRIVER_H

#include "model/driver.h"

#define CLL_TP_MAX 16 /* ranks of one context */

#endif
