/* testthreads.h -- pthread_create made to fail on demand, for the tests of
 * the code that falls back to working without a thread (recpipe and its
 * users).  testthreads.c defines pthread_create over libc's in the test
 * binary it is linked into; while testthreads_fail is set, every call
 * fails with EAGAIN, and testthreads_started counts those that started. */
#ifndef NEX_TESTTHREADS_H
#define NEX_TESTTHREADS_H

#include <stdbool.h>

extern bool testthreads_fail;
extern int testthreads_started;

#endif
