/* SPDX-License-Identifier: MIT */
/*
 * The personality routine of the shim's own frames: libgcc's C one, except
 * for a frame stopped in the middle of its code.
 *
 * The wrappers end their wait scope in a cleanup (-fexceptions), which the
 * unwinding of a cancellation or a pthread_exit runs as it passes their
 * frames.  The compiler makes a cleanup right for the frames it expects
 * unwinding to pass: stopped at a call, where registers and stack are as
 * the cleanup's code assumes.  Asynchronous cancellation, or a
 * pthread_exit from a signal handler, unwinds from whatever instruction
 * the signal interrupted, and the cleanup covering it is entered with that
 * instruction's state: between the push of a call's seventh argument and
 * the call (the stack pointer 8 bytes off, and the first aligned SSE
 * store below faulted: reliability.torture's target died in CI), or past
 * the epilogue's stack release (the cleanup read the caller's frame as its
 * own).  No compiler flag makes every instruction a safe start.
 *
 * So a frame the unwinder marks as interrupted (its instruction pointer
 * is exact, not a return address: _Unwind_GetIPInfo) runs no cleanup of
 * the shim's: its wait scope stays open, which the thread's end makes
 * moot (asynchronous cancellation and pthread_exit end the thread; the
 * end of tracking does not look at the scope, and a later wait finds the
 * scope's frame gone, thread.c).  Every frame above it stopped at a call
 * and runs its cleanups as before.  This routine is hidden: the shim's
 * frames name it (through their CIE's personality pointer, which binds
 * inside the library), the program's never do.
 */
#include <dlfcn.h>
#include <unwind.h>

#include "shim.h"

typedef _Unwind_Reason_Code (*personality_routine)(int version, _Unwind_Action actions,
						   _Unwind_Exception_Class exception_class,
						   struct _Unwind_Exception *exception,
						   struct _Unwind_Context *context);

static personality_routine libgcc_personality;

/* At start, with the real functions; again at first use should that
 * have found nothing. */
void tdshim_personality_init(void)
{
	CMM_STORE_SHARED(libgcc_personality, (personality_routine)dlsym(RTLD_NEXT, "__gcc_personality_v0"));
}

_Unwind_Reason_Code __gcc_personality_v0(int version, _Unwind_Action actions, _Unwind_Exception_Class exception_class,
					 struct _Unwind_Exception *exception, struct _Unwind_Context *context);
_Unwind_Reason_Code __gcc_personality_v0(int version, _Unwind_Action actions, _Unwind_Exception_Class exception_class,
					 struct _Unwind_Exception *exception, struct _Unwind_Context *context)
{
	personality_routine libgcc = CMM_LOAD_SHARED(libgcc_personality);
	int interrupted = 0;

	_Unwind_GetIPInfo(context, &interrupted);
	if (interrupted)
		return _URC_CONTINUE_UNWIND;
	if (caa_unlikely(!libgcc)) {
		tdshim_personality_init();
		libgcc = CMM_LOAD_SHARED(libgcc_personality);
		/* Without libgcc's routine no cleanup can be found: the
		 * unwinding goes on past the frame, as for an interrupted
		 * one. */
		if (!libgcc)
			return _URC_CONTINUE_UNWIND;
	}
	return libgcc(version, actions, exception_class, exception, context);
}
