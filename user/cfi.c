// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The DWARF call frame information of one section (.eh_frame or
 * .debug_frame), run FDE by FDE and reduced to struct tb_cfi_row.
 *
 * Only three columns matter to an x86-64 unwinder that wants return
 * addresses: the CFA, the return address and rbp (the one callee-saved
 * register a CFA rule may depend on). Every other register's rule is parsed
 * and ignored. The input is untrusted (a file a profiled process maps):
 * every read is bounded by its section, every loop by its bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfi.h"

/* DWARF register numbers of the x86-64 psABI. */
#define REG_RBP		6
#define REG_RSP		7
#define REG_RA		16

#define PE_OMIT		0xff
#define PE_INDIRECT	0x80
/* Nesting of DW_CFA_remember_state kept; deeper FDEs are skipped. */
#define STATE_STACK	16

struct rd {
	const uint8_t *base;	/* the section's first byte */
	const uint8_t *p;
	const uint8_t *end;
	uint64_t vaddr;		/* address of base */
	int bad;
};

enum rule_how { R_UNDEF, R_SAME, R_OFFSET, R_OTHER };

struct rule {
	uint8_t how;
	int64_t off;
};

struct cfa {
	uint8_t expr;		/* 0: reg + off; 1: an expression */
	uint8_t plt_arg;	/* the PLT expression's threshold, 0 if another */
	uint64_t reg;
	int64_t off;
};

struct state {
	struct cfa cfa;
	struct rule rbp;
	struct rule ra;
};

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	uint8_t signal;
	uint8_t has_z;
	const uint8_t *insn;
	const uint8_t *insn_end;
};

struct machine {
	const struct cie *cie;
	struct state cur;
	struct state init;	/* after the CIE's instructions: DW_CFA_restore */
	struct state stack[STATE_STACK];
	int depth;
	uint64_t loc;
	uint64_t end;
	int eh;
};

/* ---- Bounded reads ---------------------------------------------------------- */

static int need(struct rd *r, size_t n)
{
	if (r->bad || r->p > r->end || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	return 1;
}

static uint64_t rd_le(struct rd *r, size_t n)
{
	uint64_t v = 0;
	size_t i;

	if (!need(r, n))
		return 0;
	for (i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

/* LEB128's bits; *shift and *last tell a signed reader how to extend. */
static uint64_t rd_leb(struct rd *r, unsigned *shift, uint8_t *last)
{
	uint64_t v = 0;
	uint8_t b;

	*shift = 0;
	do {
		if (!need(r, 1))
			return 0;
		b = *r->p++;
		if (*shift < 64)
			v |= (uint64_t)(b & 0x7f) << *shift;
		*shift += 7;
	} while (b & 0x80);
	*last = b;
	return v;
}

static uint64_t rd_uleb(struct rd *r)
{
	unsigned shift;
	uint8_t last;

	return rd_leb(r, &shift, &last);
}

static int64_t rd_sleb(struct rd *r)
{
	unsigned shift;
	uint8_t last = 0;
	uint64_t v = rd_leb(r, &shift, &last);

	if (shift < 64 && (last & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

static uint64_t here(const struct rd *r)
{
	return r->vaddr + (uint64_t)(r->p - r->base);
}

/* The value part of a DW_EH_PE_* encoding (low nibble). */
static uint64_t rd_format(struct rd *r, uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x00: return rd_le(r, 8);
	case 0x01: return rd_uleb(r);
	case 0x02: return rd_le(r, 2);
	case 0x03: return rd_le(r, 4);
	case 0x04: return rd_le(r, 8);
	case 0x09: return (uint64_t)rd_sleb(r);
	case 0x0a: return (uint64_t)(int64_t)(int16_t)rd_le(r, 2);
	case 0x0b: return (uint64_t)(int64_t)(int32_t)rd_le(r, 4);
	case 0x0c: return rd_le(r, 8);
	}
	r->bad = 1;
	return 0;
}

/*
 * A DW_EH_PE_* encoded pointer. Only absolute, pc-relative and aligned
 * applications mean something without more context; the others (text-,
 * data-, function-relative) make the entry unusable. *indirect is set when
 * the value is the address of the pointer, which we never dereference.
 */
static uint64_t rd_pointer(struct rd *r, uint8_t enc, int *indirect)
{
	uint64_t at = here(r), v;

	*indirect = !!(enc & PE_INDIRECT);
	switch (enc & 0x70) {
	case 0x00:
		return rd_format(r, enc);
	case 0x10:
		v = rd_format(r, enc);
		return at + v;
	case 0x50:
		while (!r->bad && (here(r) & 7))
			if (need(r, 1))
				r->p++;
		return rd_le(r, 8);
	}
	r->bad = 1;
	return 0;
}

uint64_t cfi_hdr_pointer(const uint8_t *p, size_t len, uint64_t vaddr, size_t off,
			 uint8_t enc, size_t *next, int *ok)
{
	struct rd r = { .base = p, .p = p + off, .end = p + len, .vaddr = vaddr };
	int ind = 0;
	uint64_t v;

	if (off > len || enc == PE_OMIT) {
		*ok = 0;
		return 0;
	}
	if ((enc & 0x70) == 0x30)
		v = vaddr + rd_format(&r, enc);
	else
		v = rd_pointer(&r, enc, &ind);
	*ok = !r.bad && !ind;
	*next = (size_t)(r.p - p);
	return v;
}

/* ---- Rows ------------------------------------------------------------------- */

static int push_row(struct cfi_table *t, const struct tb_cfi_row *row)
{
	struct tb_cfi_row *n;
	size_t cap;

	if (t->nrows >= CFI_MAX_ROWS) {
		t->truncated = 1;
		return -E2BIG;
	}
	if (t->nrows == t->cap) {
		cap = t->cap ? t->cap * 2 : 1024;
		n = realloc(t->rows, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->rows = n;
		t->cap = cap;
	}
	t->rows[t->nrows++] = *row;
	return 0;
}

static void reduce_rbp(const struct rule *rbp, struct tb_cfi_row *row)
{
	row->rbp_rule = TB_RBP_UNKNOWN;
	if (rbp->how == R_SAME || rbp->how == R_UNDEF) {
		/* Not saved yet: a callee-saved register keeps its value. */
		row->rbp_rule = TB_RBP_SAME;
	} else if (rbp->how == R_OFFSET && rbp->off % 8 == 0 &&
		   rbp->off >= -128 * 8 && rbp->off <= 127 * 8) {
		row->rbp_rule = TB_RBP_AT_CFA;
		row->rbp_off8 = (int8_t)(rbp->off / 8);
	}
}

static uint8_t reduce_cfa(const struct cfa *cfa, struct tb_cfi_row *row)
{
	if (cfa->off < INT32_MIN || cfa->off > INT32_MAX)
		return TB_CFI_UNSUPPORTED;
	row->cfa_off = (int32_t)cfa->off;
	if (cfa->expr) {
		row->arg = cfa->plt_arg;
		return cfa->plt_arg ? TB_CFI_PLT : TB_CFI_UNSUPPORTED;
	}
	if (cfa->reg == REG_RSP)
		return TB_CFI_RSP;
	if (cfa->reg == REG_RBP)
		return TB_CFI_RBP;
	return TB_CFI_UNSUPPORTED;
}

/* The row for [m->loc, ...) from the state in force there. */
static int emit(struct cfi_table *t, const struct machine *m)
{
	const struct state *s = &m->cur;
	struct tb_cfi_row row = { .pc = (uint32_t)m->loc };

	if (m->loc >= m->end)
		return 0;
	reduce_rbp(&s->rbp, &row);
	if (s->ra.how == R_UNDEF)
		row.kind = TB_CFI_END;
	else if (m->cie->signal)
		row.kind = TB_CFI_SIGNAL;
	else if (s->ra.how != R_OFFSET || s->ra.off != -8)
		row.kind = TB_CFI_UNSUPPORTED;
	else
		row.kind = reduce_cfa(&s->cfa, &row);
	if (row.kind != TB_CFI_RSP && row.kind != TB_CFI_RBP && row.kind != TB_CFI_PLT) {
		row.cfa_off = 0;
		row.arg = 0;
	}
	if (row.kind == TB_CFI_UNSUPPORTED)
		t->unsupported++;
	return push_row(t, &row);
}

/* ---- The CFA program -------------------------------------------------------- */

/*
 * The CFA expression of lazy-binding PLT entries, which the linker writes
 * for a whole .plt: CFA = rsp + off + ((rip & 15) >= N ? 8 : 0) (the push
 * inside each 16-byte entry moves rsp). Any other expression is unsupported.
 */
static uint8_t plt_threshold(const uint8_t *e, size_t len, int64_t *off)
{
	struct rd r = { .base = e, .p = e, .end = e + len };
	uint8_t lit;

	if (!need(&r, 1) || *r.p++ != 0x77)		/* DW_OP_breg7 (rsp) */
		return 0;
	*off = rd_sleb(&r);
	if (!need(&r, 9) || r.p[0] != 0x80 || r.p[1] != 0x00 ||	/* breg16 0 */
	    r.p[2] != 0x3f || r.p[3] != 0x1a)		/* lit15; and */
		return 0;
	lit = r.p[4];					/* litN */
	if (lit < 0x31 || lit > 0x4f || r.p[5] != 0x2a ||	/* ge */
	    r.p[6] != 0x33 || r.p[7] != 0x24 || r.p[8] != 0x22 ||	/* lit3 shl plus */
	    r.end - r.p != 9)
		return 0;
	return (uint8_t)(lit - 0x30);
}

static struct rule *column(struct state *s, const struct cie *c, uint64_t reg)
{
	if (reg == c->ra_reg)
		return &s->ra;
	if (reg == REG_RBP)
		return &s->rbp;
	return NULL;
}

static void set_rule(struct machine *m, uint64_t reg, uint8_t how, int64_t off)
{
	struct rule *r = column(&m->cur, m->cie, reg);

	if (r) {
		r->how = how;
		r->off = off;
	}
}

static void restore_rule(struct machine *m, uint64_t reg)
{
	struct rule *r = column(&m->cur, m->cie, reg);

	if (r)
		*r = *column(&m->init, m->cie, reg);
}

static void skip_block(struct rd *r)
{
	uint64_t n = rd_uleb(r);

	if (need(r, n))
		r->p += n;
}

static void def_cfa_expr(struct machine *m, struct rd *r)
{
	uint64_t n = rd_uleb(r);
	int64_t off = 0;

	if (!need(r, n))
		return;
	m->cur.cfa.expr = 1;
	m->cur.cfa.plt_arg = plt_threshold(r->p, n, &off);
	m->cur.cfa.off = off;
	r->p += n;
}

/*
 * An operand times the data alignment; INT64_MIN (which no row can hold,
 * so the rule becomes unsupported) when a hostile file makes it overflow.
 */
static int64_t scaled(int64_t v, int64_t align, int negate)
{
	int64_t out;

	if (__builtin_mul_overflow(v, align, &out) || (negate && out == INT64_MIN))
		return INT64_MIN;
	return negate ? -out : out;
}

/* Moves to a new location, emitting the row for the old one first. */
static int advance(struct cfi_table *t, struct machine *m, uint64_t to)
{
	int err;

	if (to <= m->loc)
		return to == m->loc ? 0 : -EINVAL;
	err = emit(t, m);
	m->loc = to;
	return err;
}

static int remember(struct machine *m)
{
	if (m->depth == STATE_STACK)
		return -E2BIG;
	m->stack[m->depth++] = m->cur;
	return 0;
}

/*
 * The CFA rule comes back with the registers: what GCC's epilogues rely on,
 * and what libgcc, gdb and readelf do.
 */
static int forget(struct machine *m)
{
	if (!m->depth)
		return -EINVAL;
	m->cur = m->stack[--m->depth];
	return 0;
}

/* The opcodes with an operand in their low 6 bits. */
static int op_primary(struct cfi_table *t, struct machine *m, struct rd *r, uint8_t op)
{
	uint64_t low = op & 0x3f;

	switch (op & 0xc0) {
	case 0x40:
		return advance(t, m, m->loc + low * m->cie->code_align);
	case 0x80:
		set_rule(m, low, R_OFFSET, scaled((int64_t)rd_uleb(r), m->cie->data_align, 0));
		return 0;
	default:
		restore_rule(m, low);
		return 0;
	}
}

static int op_cfa(struct machine *m, struct rd *r, uint8_t op)
{
	switch (op) {
	case 0x0c:	/* def_cfa */
		m->cur.cfa.reg = rd_uleb(r);
		m->cur.cfa.off = (int64_t)rd_uleb(r);
		break;
	case 0x12:	/* def_cfa_sf */
		m->cur.cfa.reg = rd_uleb(r);
		m->cur.cfa.off = scaled(rd_sleb(r), m->cie->data_align, 0);
		break;
	case 0x0d:	/* def_cfa_register */
		m->cur.cfa.reg = rd_uleb(r);
		break;
	case 0x0e:	/* def_cfa_offset */
		m->cur.cfa.off = (int64_t)rd_uleb(r);
		break;
	case 0x13:	/* def_cfa_offset_sf */
		m->cur.cfa.off = scaled(rd_sleb(r), m->cie->data_align, 0);
		break;
	case 0x0f:
		def_cfa_expr(m, r);
		return 0;
	default:
		return -ENOTSUP;
	}
	/* A register rule ends any expression (and its PLT meaning). */
	m->cur.cfa.expr = 0;
	m->cur.cfa.plt_arg = 0;
	return 0;
}

static int op_register(struct machine *m, struct rd *r, uint8_t op)
{
	uint64_t reg;
	int64_t off;

	switch (op) {
	case 0x05:	/* offset_extended */
	case 0x11:	/* offset_extended_sf */
	case 0x2f:	/* GNU_negative_offset_extended */
		reg = rd_uleb(r);
		off = op == 0x11 ? rd_sleb(r) : (int64_t)rd_uleb(r);
		set_rule(m, reg, R_OFFSET, scaled(off, m->cie->data_align, op == 0x2f));
		return 0;
	case 0x06:	/* restore_extended */
		restore_rule(m, rd_uleb(r));
		return 0;
	case 0x07:	/* undefined */
		set_rule(m, rd_uleb(r), R_UNDEF, 0);
		return 0;
	case 0x08:	/* same_value */
		set_rule(m, rd_uleb(r), R_SAME, 0);
		return 0;
	case 0x09:	/* register */
	case 0x14:	/* val_offset */
		reg = rd_uleb(r);
		rd_uleb(r);
		set_rule(m, reg, R_OTHER, 0);
		return 0;
	case 0x15:	/* val_offset_sf */
		reg = rd_uleb(r);
		rd_sleb(r);
		set_rule(m, reg, R_OTHER, 0);
		return 0;
	case 0x10:	/* expression */
	case 0x16:	/* val_expression */
		reg = rd_uleb(r);
		skip_block(r);
		set_rule(m, reg, R_OTHER, 0);
		return 0;
	}
	return -ENOTSUP;
}

static int op_extended(struct cfi_table *t, struct machine *m, struct rd *r, uint8_t op)
{
	const struct cie *c = m->cie;
	int ind = 0, err;

	switch (op) {
	case 0x00:	/* nop */
		return 0;
	case 0x01:	/* set_loc */
		return advance(t, m, rd_pointer(r, m->eh ? c->fde_enc : 0, &ind));
	case 0x02:
		return advance(t, m, m->loc + rd_le(r, 1) * c->code_align);
	case 0x03:
		return advance(t, m, m->loc + rd_le(r, 2) * c->code_align);
	case 0x04:
		return advance(t, m, m->loc + rd_le(r, 4) * c->code_align);
	case 0x0a:
		return remember(m);
	case 0x0b:
		return forget(m);
	case 0x2e:	/* GNU_args_size */
		rd_uleb(r);
		return 0;
	}
	err = op_cfa(m, r, op);
	if (err == -ENOTSUP)
		err = op_register(m, r, op);
	return err;
}

/* Runs instructions [p, end); with t NULL (the CIE's) no row is emitted. */
static int run(struct cfi_table *t, struct machine *m, const uint8_t *p,
	       const uint8_t *end, const struct rd *sec)
{
	struct rd r = { .base = sec->base, .p = p, .end = end, .vaddr = sec->vaddr };
	int err = 0;
	uint8_t op;

	while (!err && r.p < r.end) {
		op = *r.p++;
		if (op & 0xc0) {
			if (!t && (op & 0xc0) == 0x40)
				return -EINVAL;	/* a CIE does not advance */
			err = op_primary(t, m, &r, op);
		} else if (!t && op >= 0x01 && op <= 0x04) {
			return -EINVAL;
		} else {
			err = op_extended(t, m, &r, op);
		}
		if (r.bad)
			return -EINVAL;
	}
	return err;
}

/* ---- CIEs and FDEs ---------------------------------------------------------- */

struct entry {
	const uint8_t *start;	/* first byte after the length */
	const uint8_t *end;
	uint64_t id;		/* the CIE id / CIE pointer field */
	const uint8_t *id_at;
	int wide;		/* 64-bit DWARF */
};

/* The next CIE or FDE at r; 0 at a terminator or the end, 1 if read. */
static int next_entry(struct rd *r, struct entry *e)
{
	uint64_t len;

	if (r->p >= r->end)
		return 0;
	len = rd_le(r, 4);
	e->wide = len == 0xffffffff;
	if (e->wide)
		len = rd_le(r, 8);
	if (r->bad || len == 0 || len > (uint64_t)(r->end - r->p) ||
	    len < (e->wide ? 8u : 4u)) {
		/* Too short to hold its own id: as malformed as too long. */
		r->bad = r->bad || len != 0;
		return 0;
	}
	e->start = r->p;
	e->end = r->p + len;
	e->id_at = r->p;
	e->id = rd_le(r, e->wide ? 8 : 4);
	r->p = e->end;
	return !r->bad;
}

static int is_cie(const struct entry *e, int eh)
{
	if (eh)
		return e->id == 0;
	return e->id == (e->wide ? ~(uint64_t)0 : 0xffffffffu);
}

static int cie_augmentation(struct rd *r, const char *aug, struct cie *c)
{
	const uint8_t *data_end;
	uint64_t n;
	int ind;

	if (aug[0] != 'z')
		return aug[0] ? -ENOTSUP : 0;
	n = rd_uleb(r);
	if (!need(r, n))
		return -EINVAL;
	data_end = r->p + n;
	for (aug++; *aug && !r->bad; aug++) {
		if (*aug == 'R')
			c->fde_enc = (uint8_t)rd_le(r, 1);
		else if (*aug == 'P')
			rd_pointer(r, (uint8_t)rd_le(r, 1), &ind);
		else if (*aug == 'L')
			rd_le(r, 1);
		else if (*aug == 'S')
			c->signal = 1;
		else if (*aug != 'B' && *aug != 'G')
			break;	/* unknown: the length lets us skip the rest */
	}
	if (r->bad || r->p > data_end)
		return -EINVAL;
	r->p = data_end;
	return 0;
}

static int parse_cie(const struct rd *sec, const struct entry *e, int eh, struct cie *c)
{
	struct rd r = *sec;
	const char *aug;
	uint8_t version;

	r.p = e->id_at + (e->wide ? 8 : 4);
	r.end = e->end;
	memset(c, 0, sizeof(*c));
	version = (uint8_t)rd_le(&r, 1);
	aug = (const char *)r.p;
	while (need(&r, 1) && *r.p)
		r.p++;
	if (!need(&r, 1) || (version != 1 && version != 3 && version != 4))
		return -EINVAL;
	r.p++;
	if (version == 4 && (rd_le(&r, 1) != 8 || rd_le(&r, 1) != 0))
		return -ENOTSUP;	/* address size 8, no segment selector */
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	c->ra_reg = version == 1 ? rd_le(&r, 1) : rd_uleb(&r);
	c->fde_enc = eh ? 0 : 0x04;	/* DW_EH_PE_absptr; .debug_frame: udata8 */
	c->has_z = aug[0] == 'z';
	if (r.bad || (eh && cie_augmentation(&r, aug, c)) || (!eh && aug[0]))
		return -EINVAL;
	c->insn = r.p;
	c->insn_end = e->end;
	return r.bad ? -EINVAL : 0;
}

static int find_cie(const struct rd *sec, const struct entry *fde, int eh, struct cie *c)
{
	struct rd r = *sec;
	struct entry e;
	uint64_t off;

	if (eh) {
		/* .eh_frame: a distance back from the field itself. */
		if (fde->id > (uint64_t)(fde->id_at - sec->base))
			return -EINVAL;
		off = (uint64_t)(fde->id_at - sec->base) - fde->id;
	} else {
		off = fde->id;
	}
	if (off >= (uint64_t)(sec->end - sec->base))
		return -EINVAL;
	r.p = sec->base + off;
	if (!next_entry(&r, &e) || !is_cie(&e, eh))
		return -EINVAL;
	return parse_cie(sec, &e, eh, c);
}

static void machine_init(struct machine *m, const struct cie *c, int eh)
{
	memset(m, 0, sizeof(*m));
	m->cie = c;
	m->eh = eh;
	m->cur.rbp.how = R_SAME;
	m->cur.ra.how = R_UNDEF;
}

static int fde_run(struct cfi_table *t, const struct rd *sec, struct machine *m,
		   struct rd *r, uint64_t begin, uint64_t range)
{
	int err;

	err = run(NULL, m, m->cie->insn, m->cie->insn_end, sec);
	if (err)
		return err;
	m->init = m->cur;
	m->loc = begin;
	m->end = begin + range;
	if (m->cie->has_z) {
		uint64_t n = rd_uleb(r);

		if (!need(r, n))
			return -EINVAL;
		r->p += n;
	}
	err = run(t, m, r->p, r->end, sec);
	if (!err)
		err = emit(t, m);
	if (!err) {
		/* The end of this FDE: a gap unless another FDE starts here. */
		struct tb_cfi_row gap = { .pc = (uint32_t)m->end, .kind = TB_CFI_GAP };

		err = push_row(t, &gap);
	}
	return err;
}

/*
 * One FDE: its rows, or nothing. A failure inside rolls the table back so a
 * half-run FDE leaves no rows.
 */
static int parse_fde(struct cfi_table *t, const struct rd *sec, const struct entry *e,
		     int eh, const struct cfi_table *prior)
{
	struct rd r = *sec;
	struct machine m;
	struct cie c;
	uint64_t begin, range;
	size_t mark = t->nrows;
	int ind = 0, err;

	err = find_cie(sec, e, eh, &c);
	if (err)
		return err;
	r.p = e->id_at + (e->wide ? 8 : 4);
	r.end = e->end;
	begin = rd_pointer(&r, c.fde_enc, &ind);
	range = rd_format(&r, c.fde_enc);
	if (r.bad || ind)
		return -EINVAL;
	/* Rows hold 32-bit addresses; empty FDEs (discarded code) say nothing. */
	if (!range || begin > UINT32_MAX || range > UINT32_MAX - begin)
		return -ERANGE;
	if (prior && cfi_lookup(prior, begin))
		return -EEXIST;
	machine_init(&m, &c, eh);
	err = fde_run(t, sec, &m, &r, begin, range);
	if (err && err != -E2BIG && err != -ENOMEM)
		t->nrows = mark;
	if (!err && t->on_fde && mark < t->nrows)
		t->on_fde(t->fde_ctx, begin, begin + range, &t->rows[mark]);
	return err;
}

int cfi_parse_section(struct cfi_table *t, const uint8_t *data, size_t len,
		      uint64_t vaddr, int eh, const struct cfi_table *prior)
{
	struct rd sec = { .base = data, .p = data, .end = data + len, .vaddr = vaddr };
	struct entry e;
	int err, fdes = 0;

	while (next_entry(&sec, &e)) {
		if (is_cie(&e, eh)) {
			t->cies++;
			continue;
		}
		err = parse_fde(t, &sec, &e, eh, prior);
		if (err == -ENOMEM || err == -E2BIG)
			return err == -E2BIG ? fdes : err;
		if (err) {
			t->fdes_skipped++;
			continue;
		}
		t->fdes++;
		fdes++;
	}
	if (sec.bad && !fdes)
		return -EINVAL;
	return fdes;
}

/* ---- Sorting and lookup ----------------------------------------------------- */

static int row_cmp(const void *a, const void *b)
{
	const struct tb_cfi_row *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	/* At one address a gap (the end of an FDE) yields to a real row. */
	if ((x->kind == TB_CFI_GAP) != (y->kind == TB_CFI_GAP))
		return x->kind == TB_CFI_GAP ? -1 : 1;
	return memcmp(x, y, sizeof(*x));
}

static int same_rule(const struct tb_cfi_row *a, const struct tb_cfi_row *b)
{
	return a->kind == b->kind && a->cfa_off == b->cfa_off &&
	       a->rbp_rule == b->rbp_rule && a->rbp_off8 == b->rbp_off8 &&
	       a->arg == b->arg;
}

void cfi_finish(struct cfi_table *t)
{
	size_t i, n = 0;

	/* Counted again from the rows: an FDE rolled back took its own. */
	t->unsupported = 0;
	if (!t->nrows)
		return;
	qsort(t->rows, t->nrows, sizeof(t->rows[0]), row_cmp);
	for (i = 0; i < t->nrows; i++) {
		const struct tb_cfi_row *r = &t->rows[i];

		/* The last row at an address wins (see row_cmp). */
		if (i + 1 < t->nrows && t->rows[i + 1].pc == r->pc)
			continue;
		if (n && same_rule(&t->rows[n - 1], r))
			continue;
		if (!n && r->kind == TB_CFI_GAP)
			continue;
		t->rows[n++] = *r;
	}
	t->nrows = n;
	for (i = 0; i < n; i++)
		t->unsupported += t->rows[i].kind == TB_CFI_UNSUPPORTED;
}

const struct tb_cfi_row *cfi_lookup(const struct cfi_table *t, uint64_t pc)
{
	size_t lo = 0, hi = t->nrows;

	if (pc > UINT32_MAX)
		return NULL;
	/* The last row whose pc <= the address: the form BPF will mirror. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || t->rows[lo - 1].kind == TB_CFI_GAP)
		return NULL;
	return &t->rows[lo - 1];
}

void cfi_free(struct cfi_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
