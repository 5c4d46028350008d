/* SPDX-License-Identifier: MIT */
/*
 * Non-local jumps out of a wait.  A signal handler that interrupts a wait
 * and siglongjmp's out of it skips the wait scope's end: the thread would
 * stay BLOCKED, and, were the handler inside a change of its record, that
 * change would never finish.  The jumps are interposed: before a jump
 * that leaves the outermost wait scope's frame, the scope is ended (the
 * thread is RUNNABLE at the jump) and an unfinished record change is
 * forgotten (region.h's latch: the published copies are whole, the next
 * change starts from them).
 *
 * Where the jump lands comes from the jmp_buf's saved stack pointer,
 * which glibc keeps mangled with the thread's pointer guard (x86-64:
 * rotated left by 17 bits after an xor with %fs:0x30).  Elsewhere the
 * jump is treated as leaving the scope when the thread is not on its
 * alternate signal stack.
 */
#include <setjmp.h>

#include "shim.h"

/* glibc's x86-64 jmp_buf: rbx, rbp, r12-r15, rsp, pc. */
#define JMP_BUF_STACK_POINTER 6

static bool target_stack_pointer(const struct __jmp_buf_tag *buffer, uintptr_t *stack_pointer)
{
#if defined(__x86_64__)
	uintptr_t mangled = (uintptr_t)buffer->__jmpbuf[JMP_BUF_STACK_POINTER], guard;

	__asm__("mov %%fs:0x30, %0" : "=r"(guard));
	*stack_pointer = ((mangled >> 17) | (mangled << (64 - 17))) ^ guard;
	return true;
#else
	(void)buffer;
	(void)stack_pointer;
	return false;
#endif
}

static bool on_stack(const stack_t *stack, uintptr_t address)
{
	uintptr_t base = (uintptr_t)stack->ss_sp;

	return !(stack->ss_flags & SS_DISABLE) && address >= base && address - base < stack->ss_size;
}

/* Does a jump to `buffer` leave the frame at `address`? */
static bool jump_leaves_frame(const struct __jmp_buf_tag *buffer, const void *address)
{
	uintptr_t target, frame = (uintptr_t)address;
	stack_t alternate;

	if (sigaltstack(NULL, &alternate) != 0)
		alternate.ss_flags = SS_DISABLE;
	if (!target_stack_pointer(buffer, &target))
		return !(alternate.ss_flags & SS_ONSTACK);
	if (on_stack(&alternate, frame) != on_stack(&alternate, target))
		return !on_stack(&alternate, target);
	/* Stacks grow down: a landing above the scope's frame pops it. */
	return target > frame;
}

static void before_jump(const struct __jmp_buf_tag *buffer)
{
	struct tdshim_thread *self = &tdshim_self;

	if (caa_likely(self->wait_depth == 0 && !self->writing))
		return;
	/* A change of the record that the jump interrupts never resumes. */
	if (self->writing && jump_leaves_frame(buffer, self->writing_frame))
		self->writing = 0;
	/* A write the jump does not leave (a handler's wait inside the
	 * thread's own start, say) resumes after it: only that writer may
	 * write the record, and the scope ends without a change (the wait
	 * inside it made none). */
	if (self->wait_depth != 0 && jump_leaves_frame(buffer, self->outer_scope))
		tdshim_wait_abandon(self, NULL);
}

TDSHIM_EXPORT void siglongjmp(sigjmp_buf environment, int value)
{
	tdshim_ensure_init();
	before_jump(environment);
	tdshim_real_siglongjmp(environment, value);
	__builtin_unreachable();
}

TDSHIM_EXPORT void longjmp(jmp_buf environment, int value)
{
	tdshim_ensure_init();
	before_jump(environment);
	tdshim_real_longjmp(environment, value);
	__builtin_unreachable();
}

TDSHIM_EXPORT void _longjmp(jmp_buf environment, int value)
{
	tdshim_ensure_init();
	before_jump(environment);
	tdshim_real__longjmp(environment, value);
	__builtin_unreachable();
}

/* _FORTIFY_SOURCE's checked siglongjmp. */
void __longjmp_chk(sigjmp_buf environment, int value);
TDSHIM_EXPORT void __longjmp_chk(sigjmp_buf environment, int value)
{
	tdshim_ensure_init();
	before_jump(environment);
	tdshim_real___longjmp_chk(environment, value);
	__builtin_unreachable();
}
