//! `lopdf` loading a document with every stream decoded within the budget
//! first: its loader hands each object to a filter before it unpacks object
//! streams, and after loading no stream is left for `lopdf` to decode
//! unbounded (an image's pixels are dropped instead: they are never text).
//! The objects packed in object streams are counted, and their data
//! scanned for nesting before `lopdf` parses it.

use super::decode::{decode, Budget, DecodeError};
use super::{scan, Limits, Refusal};
use lopdf::{Document, Object, ObjectId, Stream};
use std::cell::RefCell;
use std::collections::HashSet;
use std::path::Path;

/// The loading in progress on this thread (`lopdf`'s filter is a plain
/// function: it finds its state here).
struct Loading {
    limits: Limits,
    budget: Budget,
    objects: u64,
    refusal: Option<Refusal>,
    /// Streams already decoded by the filter.
    done: HashSet<ObjectId>,
}

thread_local! {
    static LOADING: RefCell<Option<Loading>> = const { RefCell::new(None) };
}

/// The document at `path`, which declares `objects` objects outside object
/// streams, loaded within `limits`.
pub(super) fn load(path: &Path, limits: &Limits, objects: u64) -> Result<Document, Refusal> {
    LOADING.set(Some(Loading {
        limits: *limits,
        budget: Budget::new(limits.max_inflated),
        objects,
        refusal: None,
        done: HashSet::new(),
    }));
    let loaded = Document::load_filtered(path, on_object);
    let Some(mut state) = LOADING.take() else {
        return Err(Refusal::Unreadable);
    };
    if let Some(refusal) = state.refusal {
        return Err(refusal);
    }
    let mut doc = loaded.map_err(|_| Refusal::Unreadable)?;
    // A stream whose `/Length` is a reference gets its data after the filter ran.
    for (id, object) in doc.objects.iter_mut() {
        if let Object::Stream(stream) = object {
            if !state.done.contains(id) {
                state.stream(stream)?;
            }
        }
    }
    Ok(doc)
}

/// `lopdf`'s filter: keeps the object it is given (for a stream, the one
/// passed in; for an object unpacked from an object stream, the one
/// returned), or drops everything once the document is refused.
fn on_object(id: ObjectId, object: &mut Object) -> Option<(ObjectId, Object)> {
    LOADING.with_borrow_mut(|state| {
        let state = state.as_mut()?;
        if state.refusal.is_some() {
            return None;
        }
        let Object::Stream(stream) = object else {
            return Some((id, object.clone()));
        };
        if let Err(refusal) = state.stream(stream) {
            state.refusal = Some(refusal);
            return None;
        }
        state.done.insert(id);
        Some((id, Object::Null))
    })
}

impl Loading {
    /// Decodes `stream` in place within the budget (its filters removed),
    /// or leaves it as it is when `lopdf` could not decode it either.
    fn stream(&mut self, stream: &mut Stream) -> Result<(), Refusal> {
        if stream.dict.get(b"Subtype").and_then(Object::as_name).ok() == Some(b"Image") {
            stream.set_plain_content(Vec::new());
            return Ok(());
        }
        let packed = stream.dict.has_type(b"ObjStm");
        if packed {
            let n = stream.dict.get(b"N").and_then(Object::as_i64).unwrap_or(0);
            self.objects = self.objects.saturating_add(n.max(0).unsigned_abs());
            if self.objects > self.limits.max_objects {
                return Err(Refusal::TooManyObjects);
            }
        }
        let filters: Vec<Vec<u8>> = match stream.filters() {
            Ok(filters) => filters.into_iter().map(<[u8]>::to_vec).collect(),
            Err(_) => Vec::new(),
        };
        if !filters.is_empty() {
            let names: Vec<&[u8]> = filters.iter().map(Vec::as_slice).collect();
            let params = stream
                .dict
                .get(b"DecodeParms")
                .and_then(Object::as_dict)
                .ok();
            match decode(&names, params, &stream.content, &mut self.budget) {
                Ok(data) => stream.set_plain_content(data),
                Err(DecodeError::OverBudget) => return Err(Refusal::TooLarge),
                Err(DecodeError::OutOfMemory) => return Err(Refusal::OutOfMemory),
                Err(DecodeError::Unsupported) => {}
            }
        }
        if packed {
            scan::content(&stream.content, &self.limits)?;
        }
        Ok(())
    }
}
