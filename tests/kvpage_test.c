/* kvpage_test: the paged KV bookkeeping (src/model/kvpage.h): cell mapping, all-or-nothing
 * reservations on a full pool, prefix reuse by whole blocks (shared, reference counted, never the
 * last prompt token), divergence, LRU eviction of cached blocks, twins, and the block invariant
 * free + cached + live == n_blocks after every step of a random workload. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "model/kvpage.h"

static void check_invariant(const cll_kvpage *p) {
    cll_kvpage_stats st;
    cll_kvpage_get_stats(p, &st);
    assert_int_equal(st.free_blocks + st.cached_blocks + st.live_blocks, st.n_blocks);
}

static void test_reserve_and_cells(void **state) {
    (void)state;
    cll_kvpage *p;
    assert_int_equal(cll_kvpage_create(8, 16, 4, 100, &p), CLL_OK);
    assert_int_equal(cll_kvpage_reserve(p, 0, 20), CLL_OK); /* 2 blocks */
    assert_int_equal(cll_kvpage_reserve(p, 1, 33), CLL_OK); /* 3 blocks */
    int32_t nb;
    const int32_t *t0 = cll_kvpage_table(p, 0, &nb);
    assert_int_equal(nb, 2);
    assert_int_equal(cll_kvpage_cell(p, 0, 17), (int64_t)t0[1] * 16 + 1);
    assert_int_equal(cll_kvpage_cell(p, 0, 20), -1); /* past the reserved cells */
    /* distinct sequences never share a writable cell */
    for (int32_t a = 0; a < 20; a++)
        for (int32_t b = 0; b < 33; b++) assert_true(cll_kvpage_cell(p, 0, a) != cll_kvpage_cell(p, 1, b));
    /* full pool: all or nothing, with a message naming the pool */
    assert_int_equal(cll_kvpage_reserve(p, 2, 16 * 4), CLL_ERR_KV_FULL);
    assert_non_null(strstr(cll_last_error(), "kv pages full"));
    assert_int_equal(cll_kvpage_n_cells(p, 2), 0);
    check_invariant(p);
    assert_int_equal(cll_kvpage_reserve(p, 2, 16 * 3), CLL_OK);
    /* over the context */
    assert_int_equal(cll_kvpage_reserve(p, 3, 200), CLL_ERR_RANGE);
    cll_kvpage_release(p, 1);
    assert_int_equal(cll_kvpage_reserve(p, 3, 40), CLL_OK);
    check_invariant(p);
    cll_kvpage_free(p);
}

static void fill(int32_t *t, int32_t n, int32_t seed) {
    for (int32_t i = 0; i < n; i++) t[i] = (seed * 7919 + i * 31) % 1000;
}

static void test_prefix_reuse(void **state) {
    (void)state;
    cll_kvpage *p;
    assert_int_equal(cll_kvpage_create(16, 16, 4, 256, &p), CLL_OK);
    int32_t prompt[40];
    fill(prompt, 40, 1);
    /* sequence 0 stores 40 tokens: 2 full blocks + a partial one */
    assert_int_equal(cll_kvpage_reserve(p, 0, 40), CLL_OK);
    assert_int_equal(cll_kvpage_commit(p, 0, prompt, 40), CLL_OK);
    assert_int_equal(cll_kvpage_commit(p, 0, prompt, 1), CLL_ERR_RANGE); /* past the reservation */
    /* a concurrent sequence with the same prompt shares the 2 full blocks while 0 lives */
    assert_int_equal(cll_kvpage_adopt(p, 1, prompt, 40), 32);
    int32_t n0, n1;
    const int32_t *t0 = cll_kvpage_table(p, 0, &n0), *t1 = cll_kvpage_table(p, 1, &n1);
    assert_int_equal(n1, 2);
    assert_int_equal(t1[0], t0[0]);
    assert_int_equal(t1[1], t0[1]);
    assert_int_equal(cll_kvpage_committed(p, 1), 32);
    /* it then writes its own cells past the shared prefix */
    assert_int_equal(cll_kvpage_reserve(p, 1, 41), CLL_OK);
    t1 = cll_kvpage_table(p, 1, &n1);
    assert_true(t1[2] != t0[2]);
    /* the prompt's last token is always computed: a 32-token prompt adopts one block, not two */
    assert_int_equal(cll_kvpage_adopt(p, 2, prompt, 32), 16);
    cll_kvpage_release(p, 2);
    /* a prompt that diverges inside the second block adopts only the first */
    int32_t other[40];
    memcpy(other, prompt, sizeof other);
    other[20] += 1;
    assert_int_equal(cll_kvpage_adopt(p, 3, other, 40), 16);
    cll_kvpage_release(p, 3);
    /* after both end, the full blocks stay cached and a later request reuses them */
    cll_kvpage_release(p, 0);
    cll_kvpage_release(p, 1);
    cll_kvpage_stats st;
    cll_kvpage_get_stats(p, &st);
    assert_int_equal(st.live_blocks, 0);
    assert_true(st.cached_blocks >= 2);
    check_invariant(p);
    assert_int_equal(cll_kvpage_adopt(p, 0, prompt, 40), 32);
    cll_kvpage_release(p, 0);
    /* an adopt into a sequence that holds cells does nothing */
    assert_int_equal(cll_kvpage_reserve(p, 1, 5), CLL_OK);
    assert_int_equal(cll_kvpage_adopt(p, 1, prompt, 40), 0);
    cll_kvpage_release(p, 1);
    check_invariant(p);
    cll_kvpage_free(p);
}

static void test_eviction_lru(void **state) {
    (void)state;
    cll_kvpage *p;
    assert_int_equal(cll_kvpage_create(4, 8, 4, 64, &p), CLL_OK);
    int32_t a[17], b[17];
    fill(a, 17, 2);
    fill(b, 17, 3);
    /* two finished requests leave 2 + 2 cached full blocks (a released first) */
    assert_int_equal(cll_kvpage_reserve(p, 0, 16), CLL_OK);
    assert_int_equal(cll_kvpage_commit(p, 0, a, 16), CLL_OK);
    cll_kvpage_release(p, 0);
    assert_int_equal(cll_kvpage_reserve(p, 0, 16), CLL_OK);
    assert_int_equal(cll_kvpage_commit(p, 0, b, 16), CLL_OK);
    cll_kvpage_release(p, 0);
    cll_kvpage_stats st;
    cll_kvpage_get_stats(p, &st);
    assert_int_equal(st.cached_blocks, 4);
    /* a new request needing 2 blocks evicts the least recently released: a's */
    int32_t c[16];
    fill(c, 16, 4);
    assert_int_equal(cll_kvpage_reserve(p, 1, 16), CLL_OK);
    cll_kvpage_get_stats(p, &st);
    assert_int_equal(st.evictions, 2);
    assert_int_equal(cll_kvpage_adopt(p, 2, a, 17), 0);  /* gone */
    assert_int_equal(cll_kvpage_adopt(p, 3, b, 17), 16); /* still there */
    check_invariant(p);
    /* nothing left to evict: live blocks are never taken */
    assert_int_equal(cll_kvpage_reserve(p, 2, 17), CLL_ERR_KV_FULL);
    cll_kvpage_free(p);
}

static void test_twins_and_random(void **state) {
    (void)state;
    cll_kvpage *p;
    assert_int_equal(cll_kvpage_create(32, 4, 8, 64, &p), CLL_OK);
    int32_t t[24];
    fill(t, 24, 5);
    /* two sequences compute the same tokens independently: one copy is findable, the other
     * private (freed, not cached, on release) */
    for (int s = 0; s < 2; s++) {
        assert_int_equal(cll_kvpage_reserve(p, s, 8), CLL_OK);
        assert_int_equal(cll_kvpage_commit(p, s, t, 8), CLL_OK);
    }
    cll_kvpage_release(p, 1);
    cll_kvpage_stats st;
    cll_kvpage_get_stats(p, &st);
    assert_int_equal(st.cached_blocks, 0);
    cll_kvpage_release(p, 0);
    cll_kvpage_get_stats(p, &st);
    assert_int_equal(st.cached_blocks, 2);
    /* a random workload keeps the invariant and never shares a writable block */
    uint32_t r = 12345;
    for (int step = 0; step < 2000; step++) {
        r = r * 1664525u + 1013904223u;
        const int32_t s = (int32_t)(r >> 8) % 8;
        const int op = (int)(r >> 20) % 4;
        if (op == 0) cll_kvpage_release(p, s);
        else if (op == 1 && cll_kvpage_n_cells(p, s) == 0) {
            int32_t pr[24];
            fill(pr, 24, (int32_t)(r >> 24) % 3);
            const int32_t got = cll_kvpage_adopt(p, s, pr, 24);
            assert_true(got % 4 == 0 && got <= 20);
        } else {
            const int32_t have = cll_kvpage_committed(p, s), add = (int32_t)(r >> 12) % 6 + 1;
            if (cll_kvpage_reserve(p, s, have + add) == CLL_OK) {
                int32_t tok[8];
                fill(tok, add, (int32_t)(r >> 24) % 3);
                assert_int_equal(cll_kvpage_commit(p, s, tok, add), CLL_OK);
            }
        }
        check_invariant(p);
        if (step % 50) continue;
        /* a cell a sequence may still write (past its committed tokens) is nobody else's */
        for (int32_t x = 0; x < 8; x++)
            for (int32_t px = cll_kvpage_committed(p, x); px < cll_kvpage_n_cells(p, x); px++) {
                const int64_t cx = cll_kvpage_cell(p, x, px);
                for (int32_t y = 0; y < 8; y++)
                    for (int32_t py = 0; y != x && py < cll_kvpage_n_cells(p, y); py++)
                        assert_true(cll_kvpage_cell(p, y, py) != cx);
            }
    }
    cll_kvpage_free(p);
}

/* a slot that keeps its prefix: blocks past it go back to the pool, the block it writes on stays
 * (unhashed), a shared block is given up rather than written, and the cells map as before */
static void test_truncate(void **state) {
    (void)state;
    cll_kvpage *p;
    assert_int_equal(cll_kvpage_create(8, 16, 3, 128, &p), CLL_OK);
    int32_t toks[64];
    for (int i = 0; i < 64; i++) toks[i] = 100 + i;
    assert_int_equal(cll_kvpage_reserve(p, 0, 40), CLL_OK); /* 3 blocks */
    const int64_t c17 = cll_kvpage_cell(p, 0, 17);
    assert_int_equal(cll_kvpage_truncate(p, 0, 20), 20);    /* keeps 2 blocks */
    cll_kvpage_stats st;
    cll_kvpage_get_stats(p, &st);
    assert_int_equal(st.live_blocks, 2);
    assert_int_equal(st.free_blocks, 6);
    assert_int_equal(cll_kvpage_n_cells(p, 0), 20);
    assert_int_equal(cll_kvpage_cell(p, 0, 17), c17);      /* the kept cells did not move */
    assert_int_equal(cll_kvpage_cell(p, 0, 20), -1);
    assert_int_equal(cll_kvpage_truncate(p, 0, 30), 20);    /* not below: nothing changes */
    assert_int_equal(cll_kvpage_truncate(p, 0, 0), 0);
    cll_kvpage_get_stats(p, &st);
    assert_int_equal(st.live_blocks, 0);
    check_invariant(p);
    /* a hashed full block the sequence goes on writing in loses its hash: no one adopts it later */
    assert_int_equal(cll_kvpage_reserve(p, 0, 33), CLL_OK);
    assert_int_equal(cll_kvpage_commit(p, 0, toks, 33), CLL_OK); /* blocks 0 and 1 full and findable */
    assert_int_equal(cll_kvpage_truncate(p, 0, 24), 24);
    assert_int_equal(cll_kvpage_adopt(p, 1, toks, 40), 16);      /* only block 0 is still findable */
    /* a shared block is never written: truncating into it gives it up */
    assert_int_equal(cll_kvpage_truncate(p, 0, 8), 0);
    assert_int_equal(cll_kvpage_n_cells(p, 0), 0);
    assert_int_equal(cll_kvpage_n_cells(p, 1), 16);
    check_invariant(p);
    cll_kvpage_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_and_cells),
        cmocka_unit_test(test_prefix_reuse),
        cmocka_unit_test(test_eviction_lru),
        cmocka_unit_test(test_twins_and_random),
        cmocka_unit_test(test_truncate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
