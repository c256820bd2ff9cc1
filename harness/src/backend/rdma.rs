//! RDMA backend (cargo feature `rdma`): libibverbs through rdma-sys. Devices, protection
//! domains, memory registration (host memory, or any address the stack accepts: GPU memory
//! with nvidia-peermem, a dma-buf), and an RC queue-pair pair connected to each other on one
//! port, so RDMA WRITE and READ run in loopback (on soft-RoCE, rxe, inside the device).
//!
//! Every failure names the verbs call and its errno.

use std::ffi::CStr;
use std::ptr;
use std::time::{Duration, Instant};

use rdma_sys::*;

/// A failed verbs call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call}: {what}")]
pub struct VerbsError {
    pub call: &'static str,
    pub what: String,
}

fn os_err(call: &'static str) -> VerbsError {
    VerbsError {
        call,
        what: std::io::Error::last_os_error().to_string(),
    }
}

fn rc_err(call: &'static str, rc: i32) -> VerbsError {
    VerbsError {
        call,
        what: std::io::Error::from_raw_os_error(rc.abs()).to_string(),
    }
}

/// The names of the RDMA devices libibverbs sees; `Err` says why none can be listed.
pub(crate) fn devices() -> Result<Vec<String>, VerbsError> {
    let mut n: i32 = 0;
    // SAFETY: ibv_get_device_list returns a NULL-terminated array (or NULL) that we free once.
    unsafe {
        let list = ibv_get_device_list(&mut n);
        if list.is_null() {
            return Err(os_err("ibv_get_device_list"));
        }
        let mut names = Vec::new();
        for i in 0..n.max(0) as usize {
            let dev = *list.add(i);
            if dev.is_null() {
                break;
            }
            let name = ibv_get_device_name(dev);
            if !name.is_null() {
                names.push(CStr::from_ptr(name).to_string_lossy().into_owned());
            }
        }
        ibv_free_device_list(list);
        Ok(names)
    }
}

/// An open device with a protection domain and one completion queue, on port 1.
#[derive(Debug)]
pub(crate) struct Verbs {
    ctx: *mut ibv_context,
    pd: *mut ibv_pd,
    cq: *mut ibv_cq,
    pub device: String,
    pub port: u8,
    pub gid_index: u8,
    gid: GidBytes,
    lid: u16,
    mtu: ibv_mtu::Type,
    /// RoCE (Ethernet link layer): addresses need a GRH.
    pub roce: bool,
}

/// `union ibv_gid` as bytes (the union itself has no Debug).
type GidBytes = [u8; 16];

const CQ_DEPTH: i32 = 64;
/// Completions waited for this long at most (a lost completion is an error, not a hang).
const COMPLETION_TIMEOUT: Duration = Duration::from_secs(30);

impl Verbs {
    /// Open `device` (or the first one), allocate a PD and a CQ, and pick a GID: the
    /// IPv4-mapped one on RoCE (RoCE v2 over the interface's address), else index 0.
    pub fn open(device: Option<&str>) -> Result<Verbs, VerbsError> {
        let mut n = 0;
        // SAFETY: the list is freed once after the context is opened (a context stays valid).
        unsafe {
            let list = ibv_get_device_list(&mut n);
            if list.is_null() {
                return Err(os_err("ibv_get_device_list"));
            }
            let mut chosen = ptr::null_mut();
            let mut name = String::new();
            for i in 0..n.max(0) as usize {
                let dev = *list.add(i);
                if dev.is_null() {
                    break;
                }
                let nm = CStr::from_ptr(ibv_get_device_name(dev))
                    .to_string_lossy()
                    .into_owned();
                if device.is_none_or(|d| d == nm) {
                    chosen = dev;
                    name = nm;
                    break;
                }
            }
            if chosen.is_null() {
                ibv_free_device_list(list);
                return Err(VerbsError {
                    call: "ibv_get_device_list",
                    what: format!("no device {}", device.unwrap_or("at all")),
                });
            }
            let ctx = ibv_open_device(chosen);
            ibv_free_device_list(list);
            if ctx.is_null() {
                return Err(os_err("ibv_open_device"));
            }
            let mut v = Verbs {
                ctx,
                pd: ptr::null_mut(),
                cq: ptr::null_mut(),
                device: name,
                port: 1,
                gid_index: 0,
                gid: [0; 16],
                lid: 0,
                mtu: ibv_mtu::IBV_MTU_1024,
                roce: false,
            };
            let mut pa: ibv_port_attr = std::mem::zeroed();
            let rc = ___ibv_query_port(ctx, v.port, &mut pa);
            if rc != 0 {
                return Err(rc_err("ibv_query_port", rc));
            }
            v.lid = pa.lid;
            v.mtu = pa.active_mtu;
            // verbs.h: IBV_LINK_LAYER_ETHERNET = 2 (an anonymous enum bindgen leaves out)
            v.roce = pa.link_layer == 2;
            let mut best = None;
            for i in 0..pa.gid_tbl_len.clamp(0, 256) {
                let mut g: ibv_gid = std::mem::zeroed();
                if ibv_query_gid(ctx, v.port, i, &mut g) != 0 {
                    continue;
                }
                let raw = g.raw;
                if raw == [0; 16] {
                    continue;
                }
                let v4 = raw[..10] == [0; 10] && raw[10..12] == [0xff, 0xff];
                if best.is_none() || (v4 && !best.is_some_and(|(_, b)| b)) {
                    best = Some(((i as u8, raw), v4));
                }
            }
            if let Some(((i, raw), _)) = best {
                v.gid_index = i;
                v.gid = raw;
            } else if v.roce {
                return Err(VerbsError {
                    call: "ibv_query_gid",
                    what: "no GID on port 1 (is the interface up with an address?)".into(),
                });
            }
            v.pd = ibv_alloc_pd(ctx);
            if v.pd.is_null() {
                return Err(os_err("ibv_alloc_pd"));
            }
            v.cq = ibv_create_cq(ctx, CQ_DEPTH, ptr::null_mut(), ptr::null_mut(), 0);
            if v.cq.is_null() {
                return Err(os_err("ibv_create_cq"));
            }
            Ok(v)
        }
    }

    /// The GID used, as text (RoCE v2: an IPv4-mapped address).
    pub(crate) fn gid_text(&self) -> String {
        std::net::Ipv6Addr::from(self.gid).to_string()
    }

    /// `ibv_reg_mr` with local write, remote write and remote read.
    ///
    /// # Safety
    /// `addr..addr+len` must stay valid (mapped, not freed) until the returned region drops.
    pub(crate) unsafe fn reg_mr(&self, addr: *mut u8, len: usize) -> Result<Mr, VerbsError> {
        let access = ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
            | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
            | ibv_access_flags::IBV_ACCESS_REMOTE_READ;
        // SAFETY: per the contract the range outlives the region.
        let mr = unsafe { ibv_reg_mr(self.pd, addr.cast(), len, access.0 as i32) };
        if mr.is_null() {
            return Err(os_err("ibv_reg_mr"));
        }
        Ok(Mr { mr })
    }

    /// `ibv_reg_dmabuf_mr` on `len` bytes at `offset` of dma-buf `fd`, at I/O virtual address
    /// `iova`.
    pub(crate) fn reg_dmabuf_mr(
        &self,
        offset: u64,
        len: usize,
        iova: u64,
        fd: i32,
    ) -> Result<Mr, VerbsError> {
        let access = ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
            | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
            | ibv_access_flags::IBV_ACCESS_REMOTE_READ;
        // SAFETY: the kernel validates the descriptor and the range.
        let mr = unsafe { ibv_reg_dmabuf_mr(self.pd, offset, len, iova, fd, access.0 as i32) };
        if mr.is_null() {
            return Err(os_err("ibv_reg_dmabuf_mr"));
        }
        Ok(Mr { mr })
    }

    fn create_qp(&self) -> Result<*mut ibv_qp, VerbsError> {
        // SAFETY: a zeroed init attr filled in; the CQ and PD are ours.
        unsafe {
            let mut ia: ibv_qp_init_attr = std::mem::zeroed();
            ia.send_cq = self.cq;
            ia.recv_cq = self.cq;
            ia.cap.max_send_wr = 16;
            ia.cap.max_recv_wr = 1;
            ia.cap.max_send_sge = 1;
            ia.cap.max_recv_sge = 1;
            ia.qp_type = ibv_qp_type::IBV_QPT_RC;
            ia.sq_sig_all = 1;
            let qp = ibv_create_qp(self.pd, &mut ia);
            if qp.is_null() {
                Err(os_err("ibv_create_qp"))
            } else {
                Ok(qp)
            }
        }
    }

    /// Bring `qp` to RTS, connected to queue pair number `dest` on this same port and GID.
    fn connect(&self, qp: *mut ibv_qp, dest: u32) -> Result<(), VerbsError> {
        // SAFETY: modify_qp on our own QP with zeroed-then-filled attributes.
        unsafe {
            let mut a: ibv_qp_attr = std::mem::zeroed();
            a.qp_state = ibv_qp_state::IBV_QPS_INIT;
            a.pkey_index = 0;
            a.port_num = self.port;
            a.qp_access_flags = (ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
                | ibv_access_flags::IBV_ACCESS_REMOTE_READ)
                .0;
            let m = ibv_qp_attr_mask::IBV_QP_STATE
                | ibv_qp_attr_mask::IBV_QP_PKEY_INDEX
                | ibv_qp_attr_mask::IBV_QP_PORT
                | ibv_qp_attr_mask::IBV_QP_ACCESS_FLAGS;
            let rc = ibv_modify_qp(qp, &mut a, m.0 as i32);
            if rc != 0 {
                return Err(rc_err("ibv_modify_qp(INIT)", rc));
            }
            let mut a: ibv_qp_attr = std::mem::zeroed();
            a.qp_state = ibv_qp_state::IBV_QPS_RTR;
            a.path_mtu = self.mtu;
            a.dest_qp_num = dest;
            a.rq_psn = 0;
            a.max_dest_rd_atomic = 4;
            a.min_rnr_timer = 12;
            a.ah_attr.port_num = self.port;
            a.ah_attr.dlid = self.lid;
            if self.roce || self.gid != [0; 16] {
                a.ah_attr.is_global = 1;
                a.ah_attr.grh.dgid.raw = self.gid;
                a.ah_attr.grh.sgid_index = self.gid_index;
                a.ah_attr.grh.hop_limit = 1;
            }
            let m = ibv_qp_attr_mask::IBV_QP_STATE
                | ibv_qp_attr_mask::IBV_QP_AV
                | ibv_qp_attr_mask::IBV_QP_PATH_MTU
                | ibv_qp_attr_mask::IBV_QP_DEST_QPN
                | ibv_qp_attr_mask::IBV_QP_RQ_PSN
                | ibv_qp_attr_mask::IBV_QP_MAX_DEST_RD_ATOMIC
                | ibv_qp_attr_mask::IBV_QP_MIN_RNR_TIMER;
            let rc = ibv_modify_qp(qp, &mut a, m.0 as i32);
            if rc != 0 {
                return Err(rc_err("ibv_modify_qp(RTR)", rc));
            }
            let mut a: ibv_qp_attr = std::mem::zeroed();
            a.qp_state = ibv_qp_state::IBV_QPS_RTS;
            a.timeout = 14;
            a.retry_cnt = 7;
            a.rnr_retry = 7;
            a.sq_psn = 0;
            a.max_rd_atomic = 4;
            let m = ibv_qp_attr_mask::IBV_QP_STATE
                | ibv_qp_attr_mask::IBV_QP_TIMEOUT
                | ibv_qp_attr_mask::IBV_QP_RETRY_CNT
                | ibv_qp_attr_mask::IBV_QP_RNR_RETRY
                | ibv_qp_attr_mask::IBV_QP_SQ_PSN
                | ibv_qp_attr_mask::IBV_QP_MAX_QP_RD_ATOMIC;
            let rc = ibv_modify_qp(qp, &mut a, m.0 as i32);
            if rc != 0 {
                return Err(rc_err("ibv_modify_qp(RTS)", rc));
            }
        }
        Ok(())
    }

    /// Two RC queue pairs on this port connected to each other: what one posts, the other's
    /// memory answers.
    pub(crate) fn loopback(&self) -> Result<Loopback<'_>, VerbsError> {
        let a = self.create_qp()?;
        let b = match self.create_qp() {
            Ok(b) => b,
            Err(e) => {
                // SAFETY: our QP, destroyed once.
                unsafe { ibv_destroy_qp(a) };
                return Err(e);
            }
        };
        let lb = Loopback { v: self, a, b };
        // SAFETY: both QPs are live.
        let (qa, qb) = unsafe { ((*a).qp_num, (*b).qp_num) };
        self.connect(a, qb)?;
        self.connect(b, qa)?;
        Ok(lb)
    }
}

impl Drop for Verbs {
    fn drop(&mut self) {
        // SAFETY: our own objects, destroyed once, children first.
        unsafe {
            if !self.cq.is_null() {
                ibv_destroy_cq(self.cq);
            }
            if !self.pd.is_null() {
                ibv_dealloc_pd(self.pd);
            }
            ibv_close_device(self.ctx);
        }
    }
}

/// A registered memory region (deregistered on drop).
#[derive(Debug)]
pub(crate) struct Mr {
    mr: *mut ibv_mr,
}

impl Mr {
    pub(crate) fn lkey(&self) -> u32 {
        // SAFETY: a live region.
        unsafe { (*self.mr).lkey }
    }
    pub(crate) fn rkey(&self) -> u32 {
        // SAFETY: a live region.
        unsafe { (*self.mr).rkey }
    }
    /// The start address and length the region reports.
    pub fn range(&self) -> (u64, usize) {
        // SAFETY: a live region.
        unsafe { ((*self.mr).addr as u64, (*self.mr).length) }
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: our own region, deregistered once.
        unsafe {
            ibv_dereg_mr(self.mr);
        }
    }
}

/// RDMA operations a loopback pair posts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Write,
    Read,
}

/// Two connected RC queue pairs (destroyed on drop).
#[derive(Debug)]
pub(crate) struct Loopback<'v> {
    v: &'v Verbs,
    a: *mut ibv_qp,
    b: *mut ibv_qp,
}

impl Loopback<'_> {
    /// Post `op` on the first QP: `len` bytes between `local` (lkey of `local_mr`) and
    /// `remote` (rkey of `remote_mr`, served by the second QP), and wait for its completion.
    pub(crate) fn transfer(
        &self,
        op: Op,
        local_mr: &Mr,
        local: u64,
        remote_mr: &Mr,
        remote: u64,
        len: u32,
    ) -> Result<(), VerbsError> {
        // SAFETY: the SGE and WR live across the post; the MRs cover the ranges (the caller
        // computed them inside the registered buffers).
        unsafe {
            let mut sge = ibv_sge {
                addr: local,
                length: len,
                lkey: local_mr.lkey(),
            };
            let mut wr: ibv_send_wr = std::mem::zeroed();
            wr.wr_id = 0x6770_6375;
            wr.sg_list = &mut sge;
            wr.num_sge = 1;
            wr.opcode = match op {
                Op::Write => ibv_wr_opcode::IBV_WR_RDMA_WRITE,
                Op::Read => ibv_wr_opcode::IBV_WR_RDMA_READ,
            };
            wr.send_flags = ibv_send_flags::IBV_SEND_SIGNALED.0;
            wr.wr.rdma.remote_addr = remote;
            wr.wr.rdma.rkey = remote_mr.rkey();
            let mut bad = ptr::null_mut();
            let rc = ibv_post_send(self.a, &mut wr, &mut bad);
            if rc != 0 {
                return Err(rc_err("ibv_post_send", rc));
            }
            let start = Instant::now();
            loop {
                let mut wc: ibv_wc = std::mem::zeroed();
                let n = ibv_poll_cq(self.v.cq, 1, &mut wc);
                if n < 0 {
                    return Err(rc_err("ibv_poll_cq", n));
                }
                if n == 1 {
                    if wc.status != ibv_wc_status::IBV_WC_SUCCESS {
                        let s = CStr::from_ptr(ibv_wc_status_str(wc.status)).to_string_lossy();
                        return Err(VerbsError {
                            call: "ibv_poll_cq",
                            what: format!("completion status {} ({s})", wc.status),
                        });
                    }
                    return Ok(());
                }
                if start.elapsed() > COMPLETION_TIMEOUT {
                    return Err(VerbsError {
                        call: "ibv_poll_cq",
                        what: format!("no completion in {COMPLETION_TIMEOUT:?}"),
                    });
                }
                std::hint::spin_loop();
            }
        }
    }
}

impl Drop for Loopback<'_> {
    fn drop(&mut self) {
        // SAFETY: our own QPs, destroyed once.
        unsafe {
            ibv_destroy_qp(self.a);
            ibv_destroy_qp(self.b);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// rdma_cm (librdmacm's synchronous endpoint API): a server and a client in two processes.

/// The buffer a server offers: address, rkey, length (sent to the client in one SEND).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Offer {
    addr: u64,
    rkey: u32,
    len: u32,
}

fn cm_endpoint(host: &CStr, port: &CStr, passive: bool) -> Result<*mut rdma_cm_id, VerbsError> {
    // SAFETY: getaddrinfo/create_ep with zeroed hints and attributes; the result list is freed
    // once the endpoint exists.
    unsafe {
        let mut hints: rdma_addrinfo = std::mem::zeroed();
        if passive {
            hints.ai_flags = RAI_PASSIVE as i32;
        }
        hints.ai_port_space = rdma_port_space::RDMA_PS_TCP as i32;
        let mut res = ptr::null_mut();
        if rdma_getaddrinfo(host.as_ptr(), port.as_ptr(), &hints, &mut res) != 0 {
            return Err(os_err("rdma_getaddrinfo"));
        }
        let mut ia: ibv_qp_init_attr = std::mem::zeroed();
        ia.cap.max_send_wr = 4;
        ia.cap.max_recv_wr = 4;
        ia.cap.max_send_sge = 1;
        ia.cap.max_recv_sge = 1;
        ia.sq_sig_all = 1;
        let mut id = ptr::null_mut();
        let rc = rdma_create_ep(&mut id, res, ptr::null_mut(), &mut ia);
        rdma_freeaddrinfo(res);
        if rc != 0 {
            return Err(os_err("rdma_create_ep"));
        }
        Ok(id)
    }
}

/// Wait for one completion of the send (`recv` false) or receive queue; its status checked.
///
/// # Safety
/// `id` must be a connected endpoint.
unsafe fn cm_comp(id: *mut rdma_cm_id, recv: bool, what: &'static str) -> Result<(), VerbsError> {
    // SAFETY: per the contract.
    unsafe {
        let mut wc: ibv_wc = std::mem::zeroed();
        let mut n = 0;
        while n == 0 {
            n = if recv {
                rdma_get_recv_comp(id, &mut wc)
            } else {
                rdma_get_send_comp(id, &mut wc)
            };
        }
        if n < 0 {
            return Err(os_err(what));
        }
        if wc.status != ibv_wc_status::IBV_WC_SUCCESS {
            return Err(VerbsError {
                call: what,
                what: format!("completion status {}", wc.status),
            });
        }
    }
    Ok(())
}

/// The server side: listen on `host:port`, call `listening`, accept one client, offer a
/// `len`-byte buffer filled by `fill` (remote read and write), wait for the client's "done"
/// message, and return the buffer as the client left it.
pub(crate) fn cm_serve(
    host: &CStr,
    port: &CStr,
    len: usize,
    fill: impl Fn(&mut [u8]),
    listening: impl FnOnce(),
) -> Result<Vec<u8>, VerbsError> {
    let listen_id = cm_endpoint(host, port, true)?;
    // SAFETY: endpoints and regions are ours; buffers outlive their regions (deregistered
    // before they drop); every post names a registered range.
    unsafe {
        if rdma_listen(listen_id, 1) != 0 {
            rdma_destroy_ep(listen_id);
            return Err(os_err("rdma_listen"));
        }
        listening();
        let mut id = ptr::null_mut();
        if rdma_get_request(listen_id, &mut id) != 0 {
            rdma_destroy_ep(listen_id);
            return Err(os_err("rdma_get_request"));
        }
        let mut buf = vec![0u8; len];
        fill(&mut buf);
        let access = ibv_access_flags::IBV_ACCESS_LOCAL_WRITE
            | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE
            | ibv_access_flags::IBV_ACCESS_REMOTE_READ;
        let mr = ibv_reg_mr((*id).pd, buf.as_mut_ptr().cast(), len, access.0 as i32);
        let mut offer = Offer {
            addr: buf.as_ptr() as u64,
            rkey: if mr.is_null() { 0 } else { (*mr).rkey },
            len: len as u32,
        };
        let mut done = [0u8; 8];
        let offer_mr = rdma_reg_msgs(id, (&mut offer as *mut Offer).cast(), 16);
        let done_mr = rdma_reg_msgs(id, done.as_mut_ptr().cast(), 8);
        let r = (|| {
            if mr.is_null() || offer_mr.is_null() || done_mr.is_null() {
                return Err(os_err("ibv_reg_mr"));
            }
            if rdma_post_recv(id, ptr::null_mut(), done.as_mut_ptr().cast(), 8, done_mr) != 0 {
                return Err(os_err("rdma_post_recv"));
            }
            if rdma_accept(id, ptr::null_mut()) != 0 {
                return Err(os_err("rdma_accept"));
            }
            let p = (&mut offer as *mut Offer).cast();
            if rdma_post_send(id, ptr::null_mut(), p, 16, offer_mr, 0) != 0 {
                return Err(os_err("rdma_post_send"));
            }
            cm_comp(id, false, "rdma_get_send_comp")?;
            cm_comp(id, true, "rdma_get_recv_comp")?;
            Ok(())
        })();
        rdma_disconnect(id);
        for m in [mr, offer_mr, done_mr] {
            if !m.is_null() {
                rdma_dereg_mr(m);
            }
        }
        rdma_destroy_ep(id);
        rdma_destroy_ep(listen_id);
        r.map(|()| buf)
    }
}

/// The client side: connect to `host:port`, receive the server's offer, RDMA READ the whole
/// buffer (returned), RDMA WRITE `write(len)` into it, and tell the server it is done.
pub(crate) fn cm_client(
    host: &CStr,
    port: &CStr,
    write: impl Fn(usize) -> Vec<u8>,
) -> Result<Vec<u8>, VerbsError> {
    let id = cm_endpoint(host, port, false)?;
    // SAFETY: as in `cm_serve`.
    unsafe {
        let mut offer = Offer::default();
        let offer_mr = rdma_reg_msgs(id, (&mut offer as *mut Offer).cast(), 16);
        let mut local = Vec::new();
        let mut local_mr = ptr::null_mut();
        let mut done = *b"gpucts!\0";
        let done_mr = rdma_reg_msgs(id, done.as_mut_ptr().cast(), 8);
        let r = (|| {
            if offer_mr.is_null() || done_mr.is_null() {
                return Err(os_err("rdma_reg_msgs"));
            }
            let p = (&mut offer as *mut Offer).cast();
            if rdma_post_recv(id, ptr::null_mut(), p, 16, offer_mr) != 0 {
                return Err(os_err("rdma_post_recv"));
            }
            if rdma_connect(id, ptr::null_mut()) != 0 {
                return Err(os_err("rdma_connect"));
            }
            cm_comp(id, true, "rdma_get_recv_comp")?;
            let len = offer.len as usize;
            local = vec![0u8; len];
            local_mr = rdma_reg_msgs(id, local.as_mut_ptr().cast(), len);
            if local_mr.is_null() {
                return Err(os_err("rdma_reg_msgs"));
            }
            let lp = local.as_mut_ptr().cast();
            if rdma_post_read(
                id,
                ptr::null_mut(),
                lp,
                len,
                local_mr,
                0,
                offer.addr,
                offer.rkey,
            ) != 0
            {
                return Err(os_err("rdma_post_read"));
            }
            cm_comp(id, false, "rdma_get_send_comp(READ)")?;
            let read = local.clone();
            local.copy_from_slice(&write(len));
            if rdma_post_write(
                id,
                ptr::null_mut(),
                lp,
                len,
                local_mr,
                0,
                offer.addr,
                offer.rkey,
            ) != 0
            {
                return Err(os_err("rdma_post_write"));
            }
            cm_comp(id, false, "rdma_get_send_comp(WRITE)")?;
            let dp = done.as_mut_ptr().cast();
            if rdma_post_send(id, ptr::null_mut(), dp, 8, done_mr, 0) != 0 {
                return Err(os_err("rdma_post_send"));
            }
            cm_comp(id, false, "rdma_get_send_comp(SEND)")?;
            Ok(read)
        })();
        rdma_disconnect(id);
        for m in [offer_mr, done_mr, local_mr] {
            if !m.is_null() {
                rdma_dereg_mr(m);
            }
        }
        rdma_destroy_ep(id);
        r
    }
}
