/* testthreads.c -- see testthreads.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "testthreads.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

bool testthreads_fail;
int testthreads_started;

int pthread_create(pthread_t *th, const pthread_attr_t *attr,
                   void *(*fn)(void *), void *arg) {
  typedef int (*create_fn)(pthread_t *, const pthread_attr_t *,
                           void *(*)(void *), void *);
  static create_fn real;
  if (testthreads_fail)
    return EAGAIN;
  if (!real)
    *(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
  testthreads_started++;
  return real(th, attr, fn, arg);
}
