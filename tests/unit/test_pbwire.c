/* test_pbwire.c -- the wire walker (server/input/pbwire.c) takes the
 * capture files' records itself (it is not the fallback that reads them)
 * and gives the structs protobuf-c's unpacker gives, unknown fields kept;
 * it gives up on a message of a type outside its set and on memory its
 * allocator does not give. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arena.h"
#include "pbwire.h"

#include "ntff.pb-c.h"
#include "ntrace.pb-c.h"

/* An allocator over an arena, and one that gives at most `left` bytes. */
struct test_mem {
  struct arena a;
  size_t left;
};

static void *test_alloc(void *ud, size_t n) {
  struct test_mem *m = ud;
  if (n > m->left)
    return NULL;
  m->left -= n;
  return arena_alloc(&m->a, n);
}

static void test_nofree(void *ud, void *p) {
  (void)ud;
  (void)p;
}

/* m packed (malloc'd, *n bytes). */
static uint8_t *test_pack(const ProtobufCMessage *m, size_t *n) {
  *n = protobuf_c_message_get_packed_size(m);
  uint8_t *b = malloc(*n ? *n : 1);
  assert_int_equal(protobuf_c_message_pack(m, b), *n);
  return b;
}

/* Whether the walker's m packs to what protobuf-c's unpacking of
 * data[0, len) packs to. */
static void assert_same_as_protobuf_c(const ProtobufCMessageDescriptor *d,
                                      const ProtobufCMessage *m,
                                      const uint8_t *data, size_t len) {
  ProtobufCMessage *b = protobuf_c_message_unpack(d, NULL, len, data);
  assert_non_null(b);
  size_t na, nb;
  uint8_t *pa = test_pack(m, &na), *pb = test_pack(b, &nb);
  assert_int_equal(na, nb);
  assert_memory_equal(pa, pb, na);
  free(pa);
  free(pb);
  protobuf_c_message_free_unpacked(b, NULL);
}

/* An ntrace event with a name, attributes, flow ids (packed), a string of
 * 300 bytes, then an unknown varint field 99 and an unknown length field
 * 98 on the record: taken, the same structs, the unknown fields kept in
 * order. */
static void test_ntrace_record(void **state) {
  (void)state;
  static char k1[] = "tensor", v1[] = "input0", k2[] = "bytes", v2[] = "4096",
              name[] = "nrt_execute";
  Nex__Attribute a1 = NEX__ATTRIBUTE__INIT, a2 = NEX__ATTRIBUTE__INIT;
  a1.key = k1;
  a1.value = v1;
  a2.key = k2;
  a2.value = v2;
  a2.is_number = 1;
  Nex__Attribute *attrs[] = {&a1, &a2};
  uint64_t flows[] = {1, 1ull << 40, 7};
  char model[301];
  memset(model, 'm', 300);
  model[300] = '\0';
  Nex__SystemEvent e = NEX__SYSTEM_EVENT__INIT;
  e.id = 12;
  e.name = name;
  e.timestamp = 1766072157230869715;
  e.duration = -5;
  e.nc_idx = -1;
  e.model_name = model;
  e.flow_id = flows;
  e.n_flow_id = 3;
  e.attributes = attrs;
  e.n_attributes = 2;
  Nex__NtraceRecord r = NEX__NTRACE_RECORD__INIT;
  r.record_case = NEX__NTRACE_RECORD__RECORD_EVENT;
  r.event = &e;
  size_t n;
  uint8_t *p = test_pack(&r.base, &n);
  static const uint8_t tail[] = {0x98, 0x06, 0x05, 0x92, 0x06, 0x02, 'h', 'i'};
  p = realloc(p, n + sizeof tail);
  memcpy(p + n, tail, sizeof tail);
  n += sizeof tail;

  struct test_mem mem = {{0}, SIZE_MAX};
  ProtobufCAllocator al = {test_alloc, test_nofree, &mem};
  const ProtobufCMessageDescriptor *set[] = {&nex__ntrace_record__descriptor,
                                             &nex__system_event__descriptor,
                                             &nex__attribute__descriptor};
  struct pbwire *w = pbwire_new(set, 3, &al, true);
  Nex__NtraceRecord *m = pbwire_read(w, 0, p, n, 0);
  assert_non_null(m);
  assert_int_equal(m->record_case, NEX__NTRACE_RECORD__RECORD_EVENT);
  assert_string_equal(m->event->name, "nrt_execute");
  assert_int_equal(m->event->n_flow_id, 3);
  assert_int_equal(m->event->flow_id[1], 1ull << 40);
  assert_string_equal(m->event->attributes[1]->value, "4096");
  assert_int_equal(m->base.n_unknown_fields, 2);
  assert_int_equal(m->base.unknown_fields[0].tag, 99);
  assert_int_equal(m->base.unknown_fields[1].len, 3);
  assert_same_as_protobuf_c(&nex__ntrace_record__descriptor, &m->base, p, n);

  /* the same without the event's type in the set: not taken */
  struct pbwire *w1 = pbwire_new(set, 1, &al, true);
  assert_null(pbwire_read(w1, 0, p, n, 0));
  /* unknown fields skipped by a walker made so */
  struct pbwire *w2 = pbwire_new(set, 3, &al, false);
  m = pbwire_read(w2, 0, p, n, 0);
  assert_non_null(m);
  assert_int_equal(m->base.n_unknown_fields, 0);
  /* less memory than the record needs: not taken */
  mem.left = 200;
  assert_null(pbwire_read(w, 0, p, n, 0));
  pbwire_free(w);
  pbwire_free(w1);
  pbwire_free(w2);
  arena_free(&mem.a);
  free(p);
}

/* An NTFF instruction with 300 dependency ids (packed, the array grown
 * past several powers of two), and a record naming its oneof member twice
 * (protobuf-c merges the two: the walker leaves it to protobuf-c). */
static void test_ntff_record(void **state) {
  (void)state;
  uint64_t deps[300];
  for (int i = 0; i < 300; i++)
    deps[i] = 9007199255391041ull + (uint64_t)i * 3;
  static char opcode[] = "MATMUL";
  Nex__Instruction in = NEX__INSTRUCTION__INIT;
  in.id = 9007199255391041ll;
  in.opcode = opcode;
  in.start_ts = 1000;
  in.duration_ns = 64;
  in.inst_dep_ids = deps;
  in.n_inst_dep_ids = 300;
  Nex__NtffRecord r = NEX__NTFF_RECORD__INIT;
  r.record_case = NEX__NTFF_RECORD__RECORD_INSTRUCTION;
  r.instruction = &in;
  size_t n;
  uint8_t *p = test_pack(&r.base, &n);

  struct test_mem mem = {{0}, SIZE_MAX};
  ProtobufCAllocator al = {test_alloc, test_nofree, &mem};
  const ProtobufCMessageDescriptor *set[] = {&nex__ntff_record__descriptor,
                                             &nex__instruction__descriptor};
  struct pbwire *w = pbwire_new(set, 2, &al, true);
  Nex__NtffRecord *m = pbwire_read(w, 0, p, n, 0);
  assert_non_null(m);
  assert_int_equal(m->instruction->n_inst_dep_ids, 300);
  assert_int_equal(m->instruction->inst_dep_ids[299], deps[299]);
  assert_same_as_protobuf_c(&nex__ntff_record__descriptor, &m->base, p, n);

  uint8_t *twice = malloc(2 * n);
  memcpy(twice, p, n);
  memcpy(twice + n, p, n);
  assert_null(pbwire_read(w, 0, twice, 2 * n, 0));
  pbwire_free(w);
  arena_free(&mem.a);
  free(twice);
  free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ntrace_record),
      cmocka_unit_test(test_ntff_record),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
